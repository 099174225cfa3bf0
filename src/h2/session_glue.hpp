#pragma once
// The nghttp2 glue the server session (a client's streams) and the client session (an origin's
// streams) share. Both keep their streams as shared_ptrs by id, with the raw pointer as
// nghttp2's stream user data; both give flow-control window back only as the driver passes
// bytes on (RFC 9113 section 5.2), not as they arrive; both feed a stream's outgoing body from
// its `out` string. What differs (which streams exist, the limits a peer may hit, what the
// observer hears) stays in each session.

#include "h2/nv.hpp"

#include <nghttp2/nghttp2.h>

#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>

namespace airlock::h2::glue {

// What both sessions bound in nghttp2's options: the HPACK encoder's table whatever the peer
// announces, and what a peer can make us queue (SETTINGS entries, acks of its PING and
// SETTINGS frames, CONTINUATION frames after one HEADERS).
struct option_bounds {
  std::size_t max_encoder_table = 4096;
  std::size_t max_settings = 32;
  std::size_t max_outbound_ack = 1000;
  std::size_t max_continuations = 8;
};

// nghttp2 options with those bounds and no automatic WINDOW_UPDATE (the window is given back
// by consume()). The caller adds its own and deletes them (nghttp2_option_del).
nghttp2_option* new_options(const option_bounds& b);

// The GOAWAY code for an error from nghttp2_session_mem_recv: nghttp2 says nothing to the peer
// for floods (too many acks queued, CONTINUATION frames, SETTINGS entries), so those are
// ENHANCE_YOUR_CALM; anything else is a PROTOCOL_ERROR.
std::uint32_t recv_error_code(ssize_t n);

// Appends nghttp2's frames to `out` until it holds about `max` bytes or nghttp2 has nothing
// more. 0, or nghttp2's error (negative).
ssize_t send_into(nghttp2_session* session, std::string& out, std::size_t max);

// One field of a header block, stored in the head or, once the head is done, the trailers.
// (The caller has counted it against its limit.)
template <class Stream>
void store_field(Stream& st, const std::uint8_t* name, std::size_t namelen,
                 const std::uint8_t* value, std::size_t valuelen) {
  auto& list = st.head_done ? st.trailers : st.headers;
  list.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                    std::string(reinterpret_cast<const char*>(value), valuelen));
}

// nghttp2's DATA callback: the bytes are held until the driver passes them on (consume gives
// the window back) and `notify(stream)` is told; a stream the session does not hold (one it
// let go) has its bytes given back at once.
template <class Stream, class Notify>
int receive_data(nghttp2_session* session, std::int32_t id, const std::uint8_t* data,
                 std::size_t len, Notify&& notify) {
  auto* st = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  if (!st) {
    nghttp2_session_consume(session, id, len);
    return 0;
  }
  st->body.append(reinterpret_cast<const char*>(data), len);
  st->unconsumed += len;
  notify(*st);
  return 0;
}

// nghttp2's stream closed: the stream leaves the map, marked closed with its RFC 9113 error
// code, and nghttp2 forgets it. Null for a stream not in the map.
template <class Stream>
std::shared_ptr<Stream> release(nghttp2_session* session,
                                std::map<std::int32_t, std::shared_ptr<Stream>>& streams,
                                std::int32_t id, std::uint32_t error_code) {
  auto it = streams.find(id);
  if (it == streams.end()) return nullptr;
  auto st = std::move(it->second);
  streams.erase(it);
  st->closed = true;
  st->close_error = error_code;
  // Bytes the driver still held count against the connection's window: given back, or the
  // other streams would starve.
  if (st->unconsumed > 0) nghttp2_session_consume_connection(session, st->unconsumed);
  st->unconsumed = 0;
  nghttp2_session_set_stream_user_data(session, id, nullptr);
  return st;
}

// nghttp2's data source for a stream's outgoing body (the stream is `source->ptr`): copies
// what `out` holds (up to `length`), defers while the producer has more to come, and ends the
// stream, or submits its trailers, once it said it is done and everything went. When it copied
// any, `notify(stream)` tells the producer there is room.
template <class Stream, class Notify>
ssize_t send_body(nghttp2_session* session, nghttp2_data_source* source, std::uint8_t* buf,
                  std::size_t length, std::uint32_t* flags, Notify&& notify) {
  auto& st = *static_cast<Stream*>(source->ptr);
  const std::size_t n = std::min(length, st.out_pending());
  if (n > 0) std::memcpy(buf, st.out.data() + st.out_sent, n);
  st.out_sent += n;
  st.out_total += n;
  if (st.out_sent == st.out.size()) {
    st.out.clear();
    st.out_sent = 0;
  }
  if (n == 0 && !st.out_end) return NGHTTP2_ERR_DEFERRED;
  if (st.out_end && st.out_pending() == 0) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!st.out_trailers.empty()) {
      auto nv = to_nv(st.out_trailers);
      if (nghttp2_submit_trailer(session, st.id, nv.data(), nv.size()) == 0)
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
  }
  if (n > 0) notify(st);
  return static_cast<ssize_t>(n);
}

// `n` of a stream's received body bytes went on: the peer may send that many more.
template <class Stream>
void consume(nghttp2_session* session, Stream& s, std::size_t n) {
  n = std::min<std::size_t>(n, s.unconsumed);
  if (n == 0 || s.closed) return;
  s.unconsumed -= n;
  nghttp2_session_consume(session, s.id, n);
}

// The session is going: the streams its drivers still hold read as cancelled.
template <class Stream>
void cancel_all(const std::map<std::int32_t, std::shared_ptr<Stream>>& streams) {
  for (const auto& [id, st] : streams) {
    st->closed = true;
    st->close_error = NGHTTP2_CANCEL;
  }
}

}  // namespace airlock::h2::glue
