#pragma once
// The client side of one HTTP/2 connection to an origin (RFC 9113), on nghttp2: requests in (a
// head, body pieces, trailers), the origin's bytes in, responses out (one `client_stream` per
// request: its head, body pieces as they come, trailers), nothing but memory between. The
// proxy's driver (proxy/h2_upstream.*) moves the bytes over the TLS socket.
//
// Flow control, as on the server side: a response body's bytes are given back to the origin's
// window (consume) only once the driver passed them on, so a client that does not read stops
// the origin; a request body waits in the stream's outbound buffer until the origin's window
// lets it go. The origin's SETTINGS_MAX_CONCURRENT_STREAMS is respected (can_open()), its GOAWAY
// ends the streams it did not process (closed with REFUSED_STREAM, which nghttp2 reports), its
// RST_STREAM ends one stream.
//
// Bounds on what the origin can make us hold: a response's header list (max_header_list_bytes,
// also announced as SETTINGS_MAX_HEADER_LIST_SIZE), the HPACK tables, SETTINGS entries, queued
// acks, CONTINUATION frames (nghttp2's options), per-stream and connection windows for bodies,
// no server push (SETTINGS_ENABLE_PUSH 0).
//
// @par Thread Safety
// One session is used by one connection on one thread.

#include "h2/server_session.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

struct nghttp2_session;

namespace airlock::h2 {

struct client_limits {
  std::uint32_t max_header_list_bytes = 65536;  // a response's (or its trailers') list
  std::uint32_t header_table_size = 4096;       // our HPACK decoder's table
  std::size_t max_encoder_table = 4096;         // our HPACK encoder's, whatever the origin says
  std::uint32_t initial_window = 65535;         // per stream: response bytes in flight
  std::int32_t connection_window = 1 << 20;     // all streams' response bytes in flight
  std::size_t max_settings = 32;
  std::size_t max_outbound_ack = 1000;
  std::size_t max_continuations = 8;
  // Our own cap on streams in flight, under whatever the origin allows.
  std::uint32_t max_streams = 100;
};

// One request stream to the origin, shared by the session (while nghttp2 knows it) and the
// driver's exchange, so either may end first.
struct client_stream {
  std::int32_t id = 0;
  // The request body, fed by the driver, drained by nghttp2 as the origin's window allows.
  std::string out;
  std::size_t out_sent = 0;     // of `out` (which is emptied once all of it went)
  std::uint64_t out_total = 0;  // body bytes handed to nghttp2 over the stream's life
  bool out_end = false;         // no more request body bytes will come
  header_list out_trailers;     // sent after the body, when set
  // The response, as the origin sends it.
  header_list headers;            // the final head, ":status" included, names lower case
  std::size_t header_bytes = 0;   // RFC 9113 section 6.5.2 size of the list being received
  bool head_done = false;         // the final (non-1xx) head is complete
  std::string body;               // response body bytes received, not yet taken
  bool body_done = false;         // END_STREAM received
  header_list trailers;           // the response's trailers (a HEADERS after the body)
  std::uint64_t unconsumed = 0;   // bytes taken or held, not yet given back to the window
  bool closed = false;            // nghttp2 closed the stream (ended, reset, refused)
  std::uint32_t close_error = 0;  // RFC 9113 error code of the close (0 = NO_ERROR)
  bool oversized = false;         // the origin's header list went over the limit
  void* user = nullptr;           // the driver's per-stream state

  std::size_t out_pending() const noexcept { return out.size() - out_sent; }
  // The response's status, 0 before the head.
  unsigned status() const noexcept;
};

class client_observer {
 public:
  virtual ~client_observer() = default;
  // Anything for one stream: its head, body bytes, trailers, end, close, or room in `out`.
  virtual void on_activity(client_stream&) = 0;
  // The connection's state changed: a stream slot freed, SETTINGS or GOAWAY received.
  virtual void on_connection() = 0;
};

class client_session {
 public:
  client_session(const client_limits& l, client_observer& o);
  ~client_session();
  client_session(const client_session&) = delete;
  client_session& operator=(const client_session&) = delete;

  // Feeds bytes read from the origin. False when the connection must end (why in error()).
  bool recv(std::span<const char> bytes);
  // Appends frames to send to `out`, up to about `max` bytes. False when the session failed.
  bool fill_output(std::string& out, std::size_t max);
  bool want_read() const;
  bool want_write() const;

  // Whether a new stream may be opened now: no GOAWAY either way, no failure, and fewer
  // streams in flight than the origin's SETTINGS_MAX_CONCURRENT_STREAMS and ours.
  bool can_open() const;
  // Whether the connection can ever take another stream (no GOAWAY, no failure).
  bool usable() const;
  // Opens a request stream: `fields` with the pseudo-headers first (":method", ":scheme",
  // ":authority", ":path"), names lower case, no connection-specific fields. With `has_body`,
  // the body follows through the stream's `out`. Null when it cannot be opened.
  std::shared_ptr<client_stream> submit_request(const header_list& fields, bool has_body);
  // The request body's bytes queued in `s.out` (and out_end, out_trailers) are there.
  void resume(client_stream& s);
  // `n` of the response body's bytes went on: the origin may send that many more.
  void consume(client_stream& s, std::size_t n);
  // Ends one stream (RFC 9113 error code).
  void reset(client_stream& s, std::uint32_t error_code);
  // GOAWAY to the origin: NO_ERROR lets the streams in flight finish.
  void shutdown(std::uint32_t error_code);
  // The connection is gone (read error, cut): every stream still open is closed with `code`
  // and its driver told; no stream may be opened any more.
  void abandon(std::uint32_t error_code);

  std::size_t open_streams() const noexcept { return streams_.size(); }
  std::string_view error() const noexcept { return error_; }
  bool goaway_received() const noexcept { return goaway_received_; }

 private:
  friend struct client_callbacks;
  void fail(std::string why, std::uint32_t code);

  nghttp2_session* session_ = nullptr;
  client_limits limits_;
  client_observer& observer_;
  std::map<std::int32_t, std::shared_ptr<client_stream>> streams_;
  std::string error_;
  bool failed_ = false;
  bool abandoned_ = false;
  bool goaway_received_ = false;
  bool goaway_sent_ = false;
};

}  // namespace airlock::h2
