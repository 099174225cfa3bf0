#pragma once
// One HTTP/2 connection inside an intercepted tunnel (the client picked "h2" in ALPN): the
// nghttp2 codec (h2/server_session.hpp) driven over the client's TLS stream, and each request
// stream served as an exchange of its own (h2_stream.cpp) through the same filter chain as an
// HTTP/1.1 request in a tunnel.
//
// Coroutines on the session's one-thread executor: the reader feeds the codec what the client
// sends (and stops reading while too much output waits, so a client that does not read cannot
// make the proxy queue frames for it); the writer sends what the codec has; a watchdog ends a
// connection that is idle or whose output does not move; one coroutine per stream. They wake
// each other with `signal` (a timer used as a condition: single thread, no locks).
//
// @par Thread Safety
// Everything here runs on the session's executor.

#include "filters/chain.hpp"
#include "h2/server_session.hpp"
#include "proxy/exchange_upstream.hpp"
#include "proxy/h2_upstream.hpp"
#include "proxy/session_context.hpp"
#include "proxy/signal.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::proxy {

// The driver's state of one request stream.
struct h2_stream_state {
  explicit h2_stream_state(const boost::asio::any_io_executor& ex) : changed(ex) {}
  std::shared_ptr<h2::stream> stream;
  signal changed;                      // body bytes, end, close, or room for output
  tunnel_context* upstream = nullptr;  // while one is in use (the connection may cut it)
  h2_upstream_call* call = nullptr;    // the stream on an HTTP/2 upstream, while there is one
  bool grpc = false;                   // a gRPC call: the proxy's answers are gRPC statuses
};

class h2_connection final : public h2::observer {
 public:
  h2_connection(session_context& s, tls_client& client, tunnel_context& t,
                const h2::limits& limits);

  // Serves the connection until it ends, then waits for its streams.
  boost::asio::awaitable<void> run();

  // For the streams (h2_stream.cpp).
  session_context& session() noexcept { return s_; }
  tunnel_context& tunnel() noexcept { return t_; }
  h2::server_session& codec() noexcept { return codec_; }
  std::size_t stream_buffer() const noexcept { return limits_.stream_buffer; }
  void kick() { write_wanted_.notify(); }
  bool closing() const noexcept { return closing_; }
  // Stream coroutines running, the calling stream's own among them.
  std::size_t streams_running() const noexcept { return active_; }
  // An idle upstream of this connection (unless !idle_ok), or a fresh context to connect (h2
  // streams to an HTTP/1.1 origin: one upstream connection per stream in flight, kept for the
  // next), or null when a fresh one would go past the client's connection caps in `caps`
  // (upstream_slots.hpp).
  std::unique_ptr<tunnel_context> take_upstream(const policy::model::limits& caps,
                                                bool idle_ok = true);
  void put_upstream(std::unique_ptr<tunnel_context> u);
  // The connection's HTTP/2 upstream while it takes new streams (null otherwise), and a new one
  // (an origin that picked h2) which replaces it, the old one closing once its streams end.
  std::shared_ptr<h2_upstream> upstream_h2() const;
  // Makes `up` the connection's HTTP/2 upstream, unless another stream's, made meanwhile, is
  // already there and usable: returns the one to use.
  std::shared_ptr<h2_upstream> adopt_upstream_h2(std::shared_ptr<h2_upstream> up);

  // Request body bytes the connection's streams hold whole (for a filter that reads a body
  // whole): the window is given back as they are held, so without a bound a client's 100
  // streams would pin 100 bodies per connection. Counts `n` more when the connection's total
  // stays within `cap`, else nothing (false). Given back with release_held when the stream ends.
  bool claim_held(std::size_t n, std::uint64_t cap) noexcept {
    if (held_bytes_ + n > cap) return false;
    held_bytes_ += n;
    return true;
  }
  void release_held(std::size_t n) noexcept { held_bytes_ -= n; }

  void on_request(const std::shared_ptr<h2::stream>& st) override;
  void on_activity(h2::stream& st) override;

 private:
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> watchdog();
  boost::asio::awaitable<void> serve(std::shared_ptr<h2_stream_state> ss);
  boost::asio::awaitable<void> linger();
  void cut();

  session_context& s_;
  tls_client& client_;
  tunnel_context& t_;
  h2::limits limits_;
  h2::server_session codec_;
  std::string output_;
  signal write_wanted_;
  signal output_drained_;
  signal streams_done_;
  boost::asio::steady_timer tick_;  // the watchdog's
  bool watchdog_done_ = false;
  bool goaway_ = false;         // the watchdog asked the client to go (idle, or shutting down)
  std::size_t active_ = 0;      // stream coroutines running
  std::size_t held_bytes_ = 0;  // claim_held
  bool closing_ = false;
  bool writer_done_ = false;
  std::int64_t last_read_ns_ = 0;
  std::int64_t last_write_ns_ = 0;
  std::vector<std::unique_ptr<tunnel_context>> idle_upstreams_;
  std::shared_ptr<upstream_slots> upstream_slots_;
  std::shared_ptr<h2_upstream> upstream_h2_;
  std::vector<std::weak_ptr<h2_stream_state>> streams_;
};

// The refusal detail of a stream that found no upstream slot (take_upstream).
std::string upstream_slots_detail(const policy::model::limits& caps);

// Serves one stream's exchange (h2_stream.cpp).
boost::asio::awaitable<void> serve_h2_stream(h2_connection& c, h2_stream_state& ss);

// Queues `data` on the stream's output, waiting while the client's window keeps the output
// above the stream's buffer. False when the stream or the connection ended, or the client did
// not open its window within `idle` (a zero-window stall: the stream is reset). (h2_stream.cpp)
boost::asio::awaitable<bool> h2_push_output(h2_connection& c, h2_stream_state& ss,
                                            std::string_view data, bool last,
                                            std::chrono::milliseconds idle);
// The answer did not reach the client whole (h2_push_output failed): the record keeps its
// decision and the origin's status, and says why and after how many body bytes, as
// forward_detail::note_undelivered does for HTTP/1.1. (h2_stream.cpp)
void h2_note_undelivered(h2_connection& c, const h2_stream_state& ss,
                         filters::exchange_record& rec);
// The request body did not arrive whole (the stream was reset, the connection ended, or the
// client went quiet): refused as bad_request saying which, as HTTP/1.1 records a body it could
// not read. A reset the codec made (PROTOCOL_ERROR: e.g. DATA longer or shorter than the
// content-length, RFC 9113 section 8.1.1) is named. (h2_stream.cpp)
void h2_note_request_cut(h2_connection& c, const h2_stream_state& ss,
                         filters::exchange_record& rec);
// The proxy's own answer (the refusal or failure in the record) on this stream; a gRPC call's
// as a gRPC status. (h2_stream.cpp)
boost::asio::awaitable<void> h2_answer(h2_connection& c, h2_stream_state& ss,
                                       filters::exchange_record& rec,
                                       std::chrono::milliseconds idle);

// The head of an origin's answer, and whether it went to the client yet. A body the response
// filters read goes out with its head only once they release its first bytes (as
// h1::relay_filtered does for HTTP/1.1), so that one they cut before then gets the proxy's
// answer saying why instead of a head and a reset. (h2_stream.cpp)
struct h2_response_head {
  unsigned status = 0;
  h2::header_list fields;
  bool sent = false;
  // Submits the head (DATA or trailers follow when `body`). False when the stream had closed:
  // the record then says that nothing reached the client.
  bool submit(h2_connection& c, h2_stream_state& ss, filters::exchange_record& rec, bool body);
};
// Ends an answer the filters or the origin cut: before its head went, the proxy's answer (the
// failure in the record: 502 and why, or a gRPC status); after it, a reset, so that the client
// sees the response incomplete (RFC 9113 section 8.1), or for a gRPC call trailers with the
// status and reason (the call fails, and says why). (h2_stream.cpp)
boost::asio::awaitable<void> h2_cut_answer(h2_connection& c, h2_stream_state& ss,
                                           filters::exchange_record& rec,
                                           const h2_response_head& head,
                                           std::chrono::milliseconds idle);

// Waits for the stream to change (body bytes, its end, its close, room for output) for at most
// `limit`. False on timeout or when the connection is going away. (h2_stream.cpp)
boost::asio::awaitable<bool> await_change(h2_connection& c, h2_stream_state& ss,
                                          std::chrono::steady_clock::duration limit);

// The stream's request (head rewritten for the upstream; `held`: its body read whole) over an
// HTTP/1.1 upstream, or over the connection's HTTP/2 upstream when the origin picks h2, and the
// answer back. (h2_stream_h1_upstream.cpp)
boost::asio::awaitable<void> forward_stream(h2_connection& c, h2_stream_state& ss,
                                            filters::chain& chain,
                                            http::request<http::buffer_body>& req,
                                            const std::optional<std::string>& held);

// The stream's request over the connection's HTTP/2 upstream `up`, both ways at once (a gRPC
// bidirectional call needs it): the body and trailers up through the chain's request hooks,
// the answer, its body and trailers back through the response hooks; `reconnect` for a
// refused request when `up` takes no more streams (h2_upstream_call). (h2_stream_upstream.cpp)
boost::asio::awaitable<void> forward_h2_over_h2(h2_connection& c, h2_stream_state& ss,
                                                filters::chain& chain,
                                                const http::request<http::buffer_body>& req,
                                                const std::optional<std::string>& held,
                                                h2_upstream& up, h2_reconnect reconnect);

}  // namespace airlock::proxy
