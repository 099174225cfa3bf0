#pragma once
// The admin listener (default 127.0.0.1:9464): GET /metrics, /healthz, /readyz, /policy and
// POST /reload. It is a separate listener from the proxy port, so nothing an agent sends
// through the proxy can reach it (the proxy refuses its own addresses as upstreams).
//
// Thread safety: runs on the io_context it is given; the callbacks are called from that
// context's threads.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <string>

namespace airlock::telemetry {

struct admin_handlers {
  std::function<std::string()> metrics_text;  // GET /metrics
  std::function<bool()> ready;                // GET /readyz: 200 when true, else 503
  std::function<std::string()> policy_json;   // GET /policy (JSON object)
  // POST /reload: returns true and a message when the new policy was loaded, false and the
  // load errors otherwise (answered as 200 / 422 with the message as body).
  std::function<bool(std::string& message)> reload;
};

class admin_server {
 public:
  // Binds immediately; throws boost::system::system_error when the endpoint cannot be bound
  // (startup only, not the data path).
  admin_server(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint,
               admin_handlers handlers);
  ~admin_server();
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();  // begin accepting
  void stop();   // stop accepting and close open admin connections

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace airlock::telemetry
