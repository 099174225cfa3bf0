#include "proxy/answer.hpp"

#include "core/str_cat.hpp"

namespace airlock::proxy {

std::string quote_for_header(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) continue;  // no CR/LF/control: cannot split the header
    if (u >= 0x80) {
      out.push_back('?');  // field values are ASCII here: no mojibake for the agent to parse
      continue;
    }
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

http::response<http::string_body> make_answer(core::errc why, std::string_view detail,
                                              unsigned version, bool keep_alive) {
  const auto& i = core::info(why);
  http::response<http::string_body> res{static_cast<http::status>(i.http_status),
                                        version == 10 ? 10u : 11u};
  // RFC 9209 section 2: the proxy's own name, then error and details parameters.
  std::string status = core::str_cat("airlock; error=", i.proxy_status_token);
  std::string quoted = quote_for_header(detail.empty() ? i.message : detail);
  status += core::str_cat("; details=\"", quoted, '"');
  res.set("Proxy-Status", status);
  res.set("X-Airlock-Reason", i.name);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  if (why == core::errc::auth_required)
    res.set(http::field::proxy_authenticate, "Basic realm=\"airlock\", Bearer realm=\"airlock\"");
  res.body() = core::str_cat("airlock: ", i.message, " (", i.name, ")");
  if (!detail.empty()) res.body() += core::str_cat(": ", quoted);
  res.body() += '\n';
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

http::response<http::string_body> make_endpoint_answer(unsigned status, std::string_view json,
                                                       unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(status),
                                        version == 10 ? 10u : 11u};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.body() = json;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace airlock::proxy
