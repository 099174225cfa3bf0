#include "h2/server_session.hpp"

#include "core/steady_ns.hpp"
#include "core/str_cat.hpp"
#include "h2/nv.hpp"
#include "h2/session_glue.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>

namespace airlock::h2 {

// nghttp2's callbacks, as friends of the session (user_data is the session).
struct callbacks {
  static server_session& self(void* user) { return *static_cast<server_session*>(user); }
  static stream* find(nghttp2_session* session, std::int32_t id) {
    return static_cast<stream*>(nghttp2_session_get_stream_user_data(session, id));
  }

  static int begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto& s = self(user);
    auto st = std::make_shared<stream>();
    st->id = frame->hd.stream_id;
    nghttp2_session_set_stream_user_data(session, st->id, st.get());
    s.streams_.emplace(st->id, std::move(st));
    return 0;
  }

  static int header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name,
                    std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                    std::uint8_t, void* user) {
    auto* st = find(session, frame->hd.stream_id);
    if (!st) return 0;
    auto& s = self(user);
    st->header_bytes += namelen + valuelen + field_overhead;
    if (st->header_bytes > s.limits_.max_header_list_bytes) {
      if (st->head_done) {
        // Trailers over the limit: there is no head left to answer; the stream ends.
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      // Kept counting, nothing more stored: the driver answers 431 once the head ends.
      st->oversized_head = true;
      return 0;
    }
    glue::store_field(*st, name, namelen, value, valuelen);
    return 0;
  }

  // A field name or value RFC 9113 section 8.2.1 forbids (upper case, a character outside the
  // token, CR, LF or NUL in a value, ...): in a head, marked and not stored, so the driver
  // answers 400 with its reason and records the stream, instead of a bare RST_STREAM that
  // leaves no trace; in trailers, the stream is reset (there is no head left to answer).
  static int invalid_header(nghttp2_session* session, const nghttp2_frame* frame,
                            const std::uint8_t*, std::size_t, const std::uint8_t*, std::size_t,
                            std::uint8_t, void*) {
    auto* st = find(session, frame->hd.stream_id);
    if (!st || st->head_done) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    st->malformed_head = true;
    return 0;
  }

  static int frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    auto& s = self(user);
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
      if (!s.count_reset()) return NGHTTP2_ERR_CALLBACK_FAILURE;
      return 0;
    }
    if ((frame->hd.type == NGHTTP2_PING || frame->hd.type == NGHTTP2_SETTINGS) &&
        (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
      if (!s.count_control()) return NGHTTP2_ERR_CALLBACK_FAILURE;
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    auto* st = find(session, frame->hd.stream_id);
    if (!st) return 0;
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS && !st->head_done) {
      st->head_done = true;
      st->header_bytes = 0;  // the trailers' own list is counted afresh
      st->body_done = end;
      auto it = s.streams_.find(st->id);
      if (it != s.streams_.end()) s.observer_.on_request(it->second);
      return 0;
    }
    if (end) {
      st->body_done = true;
      s.observer_.on_activity(*st);
    }
    return 0;
  }

  static int data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id,
                        const std::uint8_t* data, std::size_t len, void* user) {
    return glue::receive_data<stream>(session, id, data, len,
                                      [&](auto& st) { self(user).observer_.on_activity(st); });
  }

  static int stream_close(nghttp2_session* session, std::int32_t id, std::uint32_t error_code,
                          void* user) {
    auto& s = self(user);
    auto st = glue::release(session, s.streams_, id, error_code);
    if (!st) return 0;
    if (!st->head_done && error_code == NGHTTP2_PROTOCOL_ERROR) {
      // nghttp2 reset a stream whose head broke RFC 9113 section 8 (an upper-case name, a
      // pseudo-header missing, repeated or late, ...) before the head ended: the driver still
      // records it, as malformed, though no answer can go on a closed stream.
      st->head_done = true;
      st->malformed_head = true;
      s.observer_.on_request(st);
      return 0;
    }
    s.observer_.on_activity(*st);
    return 0;
  }

  static ssize_t read_body(nghttp2_session* session, std::int32_t, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void* user) {
    return glue::send_body<stream>(session, source, buf, length, flags,
                                   [&](auto& st) { self(user).observer_.on_activity(st); });
  }
};

server_session::server_session(const limits& l, observer& o) : limits_(l), observer_(o) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &callbacks::header);
  nghttp2_session_callbacks_set_on_invalid_header_callback(cbs, &callbacks::invalid_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &callbacks::stream_close);

  nghttp2_option* opt = glue::new_options({.max_encoder_table = limits_.max_encoder_table,
                                           .max_settings = limits_.max_settings,
                                           .max_outbound_ack = limits_.max_outbound_ack,
                                           .max_continuations = limits_.max_continuations});
  // nghttp2's own reset limit stays as a backstop behind ours (count_reset), which answers
  // with ENHANCE_YOUR_CALM.
  nghttp2_option_set_stream_reset_rate_limit(opt, 2ULL * limits_.reset_burst,
                                             2ULL * limits_.resets_per_second);
  nghttp2_option_set_no_closed_streams(opt, 1);
  nghttp2_session_server_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.initial_window},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, limits_.header_table_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits_.max_header_list_bytes},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, limits_.connection_window);
  resets_ = {static_cast<double>(limits_.reset_burst), core::steady_now_ns()};
  controls_ = {static_cast<double>(limits_.control_burst), core::steady_now_ns()};
}

server_session::~server_session() {
  glue::cancel_all(streams_);
  nghttp2_session_del(session_);
}

void server_session::fail(std::string why, std::uint32_t code) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(why);
  goaway_code_ = code;
  nghttp2_session_terminate_session(session_, code);
}

bool server_session::bucket::take(std::uint32_t burst, std::uint32_t rate) {
  const auto now = core::steady_now_ns();
  const double elapsed = static_cast<double>(now - clock_ns) / 1e9;
  clock_ns = now;
  tokens = std::min<double>(burst, tokens + elapsed * rate);
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

bool server_session::count_control() {
  if (controls_.take(limits_.control_burst, limits_.control_per_second)) return true;
  // A PING or SETTINGS flood (CVE-2019-9512, CVE-2019-9515): each one costs us an ack.
  fail(core::str_cat("more than ", limits_.control_burst, " PING/SETTINGS frames in a burst (",
                     limits_.control_per_second, " per second allowed)"),
       NGHTTP2_ENHANCE_YOUR_CALM);
  return false;
}

bool server_session::count_reset() {
  if (resets_.take(limits_.reset_burst, limits_.resets_per_second)) return true;
  // CVE-2023-44487 ("rapid reset"): streams opened and reset faster than any client needs.
  fail(core::str_cat("more than ", limits_.reset_burst, " streams reset in a burst (",
                     limits_.resets_per_second, " per second allowed)"),
       NGHTTP2_ENHANCE_YOUR_CALM);
  return false;
}

bool server_session::recv(std::span<const char> bytes) {
  if (failed_) return false;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const auto n = nghttp2_session_mem_recv(session_, data, bytes.size());
  if (failed_) return false;
  if (n < 0) {
    // nghttp2 queued the GOAWAY for protocol errors, not for floods (recv_error_code).
    fail(core::str_cat("HTTP/2: ", nghttp2_strerror(static_cast<int>(n))),
         glue::recv_error_code(n));
    return false;
  }
  return true;
}

bool server_session::fill_output(std::string& out, std::size_t max) {
  if (const auto n = glue::send_into(session_, out, max); n < 0) {
    fail(core::str_cat("HTTP/2: ", nghttp2_strerror(static_cast<int>(n))), NGHTTP2_INTERNAL_ERROR);
    return false;
  }
  return true;
}

bool server_session::want_read() const {
  return nghttp2_session_want_read(session_) != 0;
}
bool server_session::want_write() const {
  return nghttp2_session_want_write(session_) != 0;
}
bool server_session::finished() const {
  return !want_read() && !want_write();
}

bool server_session::submit_response(stream& s, unsigned status, const header_list& fields,
                                     bool has_body) {
  if (s.closed || s.responded) return false;
  s.responded = true;
  header_list all;
  all.reserve(fields.size() + 1);
  all.emplace_back(":status", std::to_string(status));
  all.insert(all.end(), fields.begin(), fields.end());
  auto nv = to_nv(all);
  nghttp2_data_provider provider{};
  provider.source.ptr = &s;
  provider.read_callback = &callbacks::read_body;
  return nghttp2_submit_response(session_, s.id, nv.data(), nv.size(),
                                 has_body ? &provider : nullptr) == 0;
}

void server_session::resume(stream& s) {
  if (!s.closed && s.responded) nghttp2_session_resume_data(session_, s.id);
}

void server_session::consume(stream& s, std::size_t n) {
  glue::consume(session_, s, n);
}

void server_session::reset(stream& s, std::uint32_t error_code) {
  if (!s.closed) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, error_code);
}

void server_session::shutdown(std::uint32_t error_code) {
  if (error_code != 0) {
    fail("HTTP/2 connection ended", error_code);
    return;
  }
  const auto last = nghttp2_session_get_last_proc_stream_id(session_);
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, nullptr, 0);
}

}  // namespace airlock::h2
