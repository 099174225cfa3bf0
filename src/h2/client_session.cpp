#include "h2/client_session.hpp"

#include "core/str_cat.hpp"
#include "h2/nv.hpp"
#include "h2/session_glue.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <charconv>

namespace airlock::h2 {

unsigned client_stream::status() const noexcept {
  for (const auto& [name, value] : headers) {
    if (name != ":status") continue;
    unsigned code = 0;
    std::from_chars(value.data(), value.data() + value.size(), code);
    return code;
  }
  return 0;
}

// nghttp2's callbacks, as friends of the session (user_data is the session).
struct client_callbacks {
  static client_session& self(void* user) { return *static_cast<client_session*>(user); }
  static client_stream* find(nghttp2_session* session, std::int32_t id) {
    return static_cast<client_stream*>(nghttp2_session_get_stream_user_data(session, id));
  }

  static int begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    auto* st = find(session, frame->hd.stream_id);
    if (!st) return 0;
    // Each header block is counted on its own: an interim (1xx) head, the final one, trailers.
    st->header_bytes = 0;
    if (!st->head_done) st->headers.clear();
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
      // Nothing of it is kept: nghttp2 resets the stream (INTERNAL_ERROR) and the driver
      // answers for the origin.
      st->oversized = true;
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    glue::store_field(*st, name, namelen, value, valuelen);
    return 0;
  }

  static int frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    auto& s = self(user);
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      s.goaway_received_ = true;
      s.observer_.on_connection();
      return 0;
    }
    if (frame->hd.type == NGHTTP2_SETTINGS) {
      s.observer_.on_connection();  // SETTINGS_MAX_CONCURRENT_STREAMS may have grown
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    auto* st = find(session, frame->hd.stream_id);
    if (!st) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && !st->head_done) {
      // RFC 9113 section 8.1: interim responses (1xx) come before the final one; they are
      // dropped (the proxy answers Expect itself), and the final head is read afresh.
      const unsigned code = st->status();
      if (code >= 100 && code < 200) {
        st->headers.clear();
        return 0;
      }
      st->head_done = true;
    }
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) st->body_done = true;
    s.observer_.on_activity(*st);
    return 0;
  }

  static int data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id,
                        const std::uint8_t* data, std::size_t len, void* user) {
    return glue::receive_data<client_stream>(
        session, id, data, len, [&](auto& st) { self(user).observer_.on_activity(st); });
  }

  static int stream_close(nghttp2_session* session, std::int32_t id, std::uint32_t error_code,
                          void* user) {
    auto& s = self(user);
    auto st = glue::release(session, s.streams_, id, error_code);
    if (!st) return 0;
    s.observer_.on_activity(*st);
    s.observer_.on_connection();  // a slot is free
    return 0;
  }

  static ssize_t read_body(nghttp2_session* session, std::int32_t, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void* user) {
    return glue::send_body<client_stream>(session, source, buf, length, flags,
                                          [&](auto& st) { self(user).observer_.on_activity(st); });
  }
};

client_session::client_session(const client_limits& l, client_observer& o)
    : limits_(l), observer_(o) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &client_callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &client_callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &client_callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &client_callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &client_callbacks::stream_close);

  nghttp2_option* opt = glue::new_options({.max_encoder_table = limits_.max_encoder_table,
                                           .max_settings = limits_.max_settings,
                                           .max_outbound_ack = limits_.max_outbound_ack,
                                           .max_continuations = limits_.max_continuations});
  // Until the origin's SETTINGS say otherwise, no more streams than our own cap.
  nghttp2_option_set_peer_max_concurrent_streams(opt, limits_.max_streams);
  nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.initial_window},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, limits_.header_table_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits_.max_header_list_bytes},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, limits_.connection_window);
}

client_session::~client_session() {
  glue::cancel_all(streams_);
  nghttp2_session_del(session_);
}

void client_session::fail(std::string why, std::uint32_t code) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(why);
  nghttp2_session_terminate_session(session_, code);
}

bool client_session::recv(std::span<const char> bytes) {
  if (failed_) return false;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const auto n = nghttp2_session_mem_recv(session_, data, bytes.size());
  if (n < 0) {
    fail(core::str_cat("HTTP/2 origin: ", nghttp2_strerror(static_cast<int>(n))),
         glue::recv_error_code(n));
    return false;
  }
  return true;
}

bool client_session::fill_output(std::string& out, std::size_t max) {
  // (Abandoned: the streams' data sources are gone, nghttp2 must not be asked for frames.)
  if (abandoned_) return false;
  if (const auto n = glue::send_into(session_, out, max); n < 0) {
    fail(core::str_cat("HTTP/2 origin: ", nghttp2_strerror(static_cast<int>(n))),
         NGHTTP2_INTERNAL_ERROR);
    return false;
  }
  return true;
}

bool client_session::want_read() const {
  return nghttp2_session_want_read(session_) != 0;
}
bool client_session::want_write() const {
  return nghttp2_session_want_write(session_) != 0;
}

bool client_session::usable() const {
  return !failed_ && !goaway_received_ && !goaway_sent_ &&
         nghttp2_session_check_request_allowed(session_) != 0;
}

bool client_session::can_open() const {
  if (!usable()) return false;
  const auto theirs =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_.size() < std::min<std::size_t>(theirs, limits_.max_streams);
}

std::shared_ptr<client_stream> client_session::submit_request(const header_list& fields,
                                                              bool has_body) {
  if (!can_open()) return nullptr;
  auto st = std::make_shared<client_stream>();
  auto nv = to_nv(fields);
  nghttp2_data_provider provider{};
  provider.source.ptr = st.get();
  provider.read_callback = &client_callbacks::read_body;
  const auto id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                         has_body ? &provider : nullptr, st.get());
  if (id < 0) return nullptr;
  st->id = id;
  streams_.emplace(id, st);
  return st;
}

void client_session::resume(client_stream& s) {
  if (!s.closed) nghttp2_session_resume_data(session_, s.id);
}

void client_session::consume(client_stream& s, std::size_t n) {
  glue::consume(session_, s, n);
}

void client_session::reset(client_stream& s, std::uint32_t error_code) {
  if (!s.closed) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, error_code);
}

void client_session::shutdown(std::uint32_t error_code) {
  if (error_code != 0) {
    fail("HTTP/2 origin connection ended", error_code);
    return;
  }
  if (goaway_sent_) return;
  goaway_sent_ = true;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
}

void client_session::abandon(std::uint32_t error_code) {
  failed_ = true;
  abandoned_ = true;
  if (error_.empty()) error_ = "HTTP/2 origin connection lost";
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, st] : streams) {
    st->closed = true;
    st->close_error = error_code;
    nghttp2_session_set_stream_user_data(session_, id, nullptr);
    observer_.on_activity(*st);
  }
  observer_.on_connection();
}

}  // namespace airlock::h2
