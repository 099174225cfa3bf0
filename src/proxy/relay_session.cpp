#include "proxy/relay_session.hpp"

#include "core/log.hpp"
#include "core/saturating_steady.hpp"
#include "net/proxy_protocol.hpp"
#include "policy/snapshot.hpp"
#include "proxy/session.hpp"
#include "proxy/session_io.hpp"
#include "proxy/worker.hpp"

#include <boost/asio/read.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <array>
#include <optional>
#include <vector>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// The agent's own address inside its jail, for the audit record; loopback when absent.
tcp::endpoint source_of(const net::proxy_v2::header& h) {
  tcp::endpoint endpoint(asio::ip::address_v4::loopback(), 0);
  if (const auto& src = h.source) {
    if (src->v6) {
      asio::ip::address_v6::bytes_type b;
      std::copy(src->addr.begin(), src->addr.end(), b.begin());
      endpoint = tcp::endpoint(asio::ip::address_v6(b), src->port);
    } else {
      asio::ip::address_v4::bytes_type b;
      std::copy(src->addr.begin(), src->addr.begin() + 4, b.begin());
      endpoint = tcp::endpoint(asio::ip::address_v4(b), src->port);
    }
  }
  return endpoint;
}

}  // namespace

asio::awaitable<void> run_relay_session(worker& w, tcp::socket socket) {
  // The header comes first and whole, within the head timeout of the policy in force when the
  // connection came; anything else ends the connection without an answer (a relay that speaks
  // wrongly is a configuration error, and whoever else reached this socket learns nothing).
  const auto timeout = w.shared().current()->limits().head_timeout;
  boost::beast::tcp_stream stream(std::move(socket));
  stream.expires_after(core::saturating_steady(timeout));
  std::array<std::uint8_t, net::proxy_v2::header_size> fixed{};
  auto [ec, n] = co_await asio::async_read(stream, asio::buffer(fixed), use_tuple);
  if (ec) co_return;
  const std::size_t rest = static_cast<std::size_t>(fixed[14]) << 8 | fixed[15];
  std::vector<std::uint8_t> header(fixed.begin(), fixed.end());
  header.resize(fixed.size() + rest);
  if (rest > 0) {
    auto [ec2, n2] = co_await asio::async_read(
        stream, asio::buffer(header.data() + fixed.size(), rest), use_tuple);
    if (ec2) co_return;
  }
  const auto decoded = net::proxy_v2::decode(header);
  std::optional<std::string> agent;
  if (decoded && decoded->value.cmd == net::proxy_v2::command::proxy)
    agent = net::proxy_v2::agent_of(decoded->value);
  if (!agent || agent->empty()) {
    AIRLOCK_LOG(warn, "proxy", "relay connection without a valid PROXY v2 agent header: closed");
    co_return;
  }
  stream.expires_never();
  // The program behind the connection (TLVs 0xE1..0xE3), when the relay found one; trusted
  // here for the same reason as the agent: only the launcher reaches this listener.
  co_await serve_connection(w, stream.release_socket(), source_of(decoded->value),
                            std::move(*agent), net::proxy_v2::binary_of(decoded->value));
}

}  // namespace airlock::proxy
