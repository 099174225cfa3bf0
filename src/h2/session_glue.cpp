#include "h2/session_glue.hpp"

namespace airlock::h2::glue {

nghttp2_option* new_options(const option_bounds& b) {
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, b.max_encoder_table);
  nghttp2_option_set_max_settings(opt, b.max_settings);
  nghttp2_option_set_max_outbound_ack(opt, b.max_outbound_ack);
  nghttp2_option_set_max_continuations(opt, b.max_continuations);
  return opt;
}

std::uint32_t recv_error_code(ssize_t n) {
  const bool flood = n == NGHTTP2_ERR_FLOODED || n == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ||
                     n == NGHTTP2_ERR_TOO_MANY_SETTINGS;
  return flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR;
}

ssize_t send_into(nghttp2_session* session, std::string& out, std::size_t max) {
  while (out.size() < max) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session, &data);
    if (n < 0) return n;
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace airlock::h2::glue
