#pragma once
// The server side of one HTTP/2 connection (RFC 9113), on nghttp2: bytes from the client in,
// streams out (one `stream` per request, its head, its body pieces as they come), and the
// answers back in (a response head, body pieces, trailers), with nothing but memory between:
// the proxy's driver (proxy/h2_session.cpp) moves the bytes over the socket and a stream's
// exchange through the filter chain.
//
// Flow control is the driver's: a request body's bytes are given back to the client's window
// (consume) only once they went on, so an upstream that does not take them stops the client; a
// response's bytes wait in the stream's outbound buffer until the client's window lets them go.
//
// The defences (docs/architecture.md, "HTTP/2"): nghttp2's own limits where it has them
// (SETTINGS entries, queued PING/SETTINGS acks, CONTINUATION frames, HPACK table sizes,
// concurrent streams, frame size); counted here where it has none that fit (a request's header
// list size, answered with 431; resets per second, CVE-2023-44487, ended with GOAWAY
// ENHANCE_YOUR_CALM).
//
// @par Thread Safety
// One session is used by one connection on one thread.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct nghttp2_session;

namespace airlock::h2 {

using header_list = std::vector<std::pair<std::string, std::string>>;

// Frame-level limits of one connection.
struct limits {
  std::uint32_t max_concurrent_streams = 100;   // SETTINGS_MAX_CONCURRENT_STREAMS
  std::uint32_t max_header_list_bytes = 65536;  // name + value + 32 per field (RFC 9113 6.5.2)
  std::uint32_t header_table_size = 4096;  // our HPACK decoder's table (SETTINGS_HEADER_TABLE_SIZE)
  std::size_t max_encoder_table = 4096;    // our HPACK encoder's table, whatever the client says
  std::uint32_t initial_window = 65535;    // per stream: a request body's bytes in flight
  std::int32_t connection_window = 1 << 20;  // all streams' request bytes in flight
  std::size_t max_settings = 32;             // entries in one SETTINGS frame
  std::size_t max_outbound_ack = 1000;       // PING and SETTINGS acks queued, unsent
  std::size_t max_continuations = 8;         // CONTINUATION frames after one HEADERS
  // Streams the client may reset (or have reset) in a burst, and per second after it.
  std::uint32_t reset_burst = 200;
  std::uint32_t resets_per_second = 100;
  // PING and SETTINGS frames (not acks) the client may send in a burst, and per second after
  // it: each makes us queue an ack, whether or not the client reads them.
  std::uint32_t control_burst = 100;
  std::uint32_t control_per_second = 20;
  // Response bytes buffered per stream before the producer waits for the client's window.
  std::size_t stream_buffer = 64 * 1024;
};

// One request stream, from its HEADERS to its close. Shared by the session (while nghttp2 knows
// the stream) and the driver (while it serves the exchange), so either may end first.
struct stream {
  std::int32_t id = 0;
  header_list headers;           // as received, pseudo-headers included, names lower case
  std::size_t header_bytes = 0;  // RFC 9113 section 6.5.2 size of what arrived
  bool oversized_head = false;   // the list went over max_header_list_bytes: fields dropped
  bool malformed_head = false;   // a field nghttp2 found invalid (RFC 9113 section 8.2.1)
  bool head_done = false;        // END_HEADERS of the request's HEADERS
  std::string body;              // request body bytes received, not yet taken
  bool body_done = false;        // END_STREAM received
  header_list trailers;          // request trailers (a HEADERS after the body)
  std::uint64_t unconsumed = 0;  // bytes taken or held, not yet given back to the window
  // The answer, fed by the driver, drained by nghttp2 as the client's window allows.
  std::string out;
  std::size_t out_sent = 0;       // of `out` (which is emptied once all of it went)
  std::uint64_t out_total = 0;    // body bytes handed to nghttp2 over the stream's life
  bool out_end = false;           // no more body bytes will come
  header_list out_trailers;       // sent after the body, when set
  bool responded = false;         // a response head was submitted
  bool closed = false;            // nghttp2 closed the stream (ended, reset or refused)
  std::uint32_t close_error = 0;  // RFC 9113 error code of the close (0 = NO_ERROR)
  void* user = nullptr;           // the driver's per-stream state

  std::size_t out_pending() const noexcept { return out.size() - out_sent; }
};

// What the session tells its driver, from inside recv() or fill_output().
class observer {
 public:
  virtual ~observer() = default;
  virtual void on_request(const std::shared_ptr<stream>&) = 0;  // head complete
  virtual void on_activity(stream&) = 0;  // body bytes, end, close, or room in `out`
};

class server_session {
 public:
  server_session(const limits& l, observer& o);
  ~server_session();
  server_session(const server_session&) = delete;
  server_session& operator=(const server_session&) = delete;

  // Feeds bytes read from the client. False when the connection must end (the reason in
  // error(); a GOAWAY, if any, is then waiting in fill_output()).
  bool recv(std::span<const char> bytes);
  // Appends frames to send to `out`, up to about `max` bytes. False when the session failed.
  bool fill_output(std::string& out, std::size_t max);
  // Whether the connection still has work: reading or writing to do.
  bool want_read() const;
  bool want_write() const;
  // Nothing more to do: no stream open and the client or we said GOAWAY (or the session failed).
  bool finished() const;

  // A response head (status and fields, names lower case, no hop-by-hop fields); the body
  // follows through `out` unless `has_body` is false.
  bool submit_response(stream& s, unsigned status, const header_list& fields, bool has_body);
  // The body's bytes queued in `s.out` (and out_end, out_trailers) are there: send what the
  // window allows.
  void resume(stream& s);
  // `n` of the request body's bytes went on: the client may send that many more.
  void consume(stream& s, std::size_t n);
  // Ends one stream (RFC 9113 error code), the others go on.
  void reset(stream& s, std::uint32_t error_code);
  // Asks the client to stop opening streams; `error_code` 0 for a graceful end.
  void shutdown(std::uint32_t error_code);

  std::size_t open_streams() const noexcept { return streams_.size(); }
  std::string_view error() const noexcept { return error_; }
  std::uint32_t goaway_sent() const noexcept { return goaway_code_; }

 private:
  friend struct callbacks;
  void fail(std::string why, std::uint32_t code);
  // A token bucket: `burst` at once, `rate` per second after.
  struct bucket {
    double tokens = 0;
    std::int64_t clock_ns = 0;
    bool take(std::uint32_t burst, std::uint32_t rate);
  };
  bool count_reset();
  bool count_control();

  nghttp2_session* session_ = nullptr;
  limits limits_;
  observer& observer_;
  std::map<std::int32_t, std::shared_ptr<stream>> streams_;
  std::string error_;
  std::uint32_t goaway_code_ = 0;
  bool failed_ = false;
  bucket resets_;    // streams reset
  bucket controls_;  // PING and SETTINGS frames
};

}  // namespace airlock::h2
