#include "proxy/h2_request.hpp"

#include "core/ascii.hpp"
#include "net/http_framing.hpp"

#include <algorithm>
#include <charconv>

namespace airlock::proxy {
using core::errc;

namespace {

bool connection_specific(std::string_view name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade" || name == "te" ||
         name == "http2-settings";
}

}  // namespace

std::optional<h1::refusal> h2_parse_request(const h2::stream& st, const net::authority& target,
                                            const policy::model::limits& limits,
                                            http::request<http::buffer_body>& req,
                                            filters::exchange& ex) {
  auto& rec = ex.record;
  ex.in_tunnel = true;
  ex.target = target;
  rec.host = target.host.text;
  rec.port = target.port;
  if (st.oversized_head)
    return h1::refusal{errc::header_too_large,
                       core::str_cat("limit is ", limits.header_bytes, " bytes")};
  std::string_view method, path, authority;
  std::string cookies;  // RFC 9113 section 8.2.3: one Cookie field for HTTP/1.1
  std::size_t count = 0;
  for (const auto& [name, value] : st.headers) {
    if (!name.empty() && name.front() == ':') {
      if (name == ":method")
        method = value;
      else if (name == ":path")
        path = value;
      else if (name == ":authority")
        authority = value;
      continue;
    }
    if (++count > limits.header_count)
      return h1::refusal{errc::header_too_large,
                         core::str_cat("more than ", limits.header_count, " headers")};
    if (name == "cookie") {
      if (!cookies.empty()) cookies += "; ";
      cookies += value;
      continue;
    }
    req.insert(name, value);
  }
  if (!cookies.empty()) req.set(http::field::cookie, cookies);
  if (!authority.empty() && !req.count(http::field::host)) req.set(http::field::host, authority);
  req.method_string(method);
  req.version(11);
  rec.method = std::string(method);
  if (st.malformed_head) {
    if (path.starts_with('/')) rec.path = std::string(path.substr(0, path.find('?')));
    // Which field is not said: it is the agent's, and may carry anything.
    return h1::refusal{errc::bad_request,
                       st.closed ? "the request head broke RFC 9113 section 8 (an upper-case "
                                   "field name, a pseudo-header missing, repeated or late, ...): "
                                   "the stream was reset (PROTOCOL_ERROR)"
                                 : "a header field name or value HTTP/2 forbids (RFC 9113 "
                                   "section 8.2.1: a character outside the token, or CR, LF or "
                                   "NUL in a value)"};
  }
  if (req.method() == http::verb::connect || path.empty() || path.front() != '/')
    return h1::refusal{errc::bad_request, "inside a tunnel only origin-form requests are allowed"};
  if (!net::target_bytes_ok(path))
    return h1::refusal{errc::bad_request, std::string(h1::bad_target_bytes)};
  req.target(path);
  if (auto problem = net::framing_problem(req); !problem.empty())
    return h1::refusal{errc::bad_request, std::string(problem)};
  ex.path_and_query = std::string(path);
  ex.path = ex.path_and_query.substr(0, ex.path_and_query.find('?'));
  rec.path = ex.path;
  if (auto cl = req.find(http::field::content_length); cl != req.end()) {
    std::uint64_t n = 0;
    const auto v = cl->value();
    if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc{})
      return h1::refusal{errc::bad_request, "malformed content-length"};
    ex.content_length = n;
  }
  ex.has_body = !st.body_done && ex.content_length.value_or(1) > 0;
  if (ex.content_length.value_or(0) > limits.body_bytes)
    return h1::refusal{errc::body_too_large,
                       core::str_cat("limit is ", limits.body_bytes, " bytes")};
  ex.body_limit = limits.body_bytes;
  return std::nullopt;
}

void h2_rewrite_for_upstream(http::request<http::buffer_body>& req, const filters::exchange& ex,
                             const std::string* held) {
  h1::rewrite_for_upstream(req, ex);
  if (held)
    req.content_length(held->size());
  else if (ex.has_body && ex.content_length)
    req.content_length(*ex.content_length);
  else if (ex.has_body)
    req.chunked(true);
}

h2::header_list h2_response_fields(const http::fields& fields) {
  h2::header_list out;
  for (const auto& f : fields) {
    auto name = core::lower(f.name_string());
    if (connection_specific(name)) continue;
    out.emplace_back(std::move(name), std::string(f.value()));
  }
  return out;
}

void h2_drop_field(h2::header_list& fields, std::string_view name) {
  fields.erase(
      std::remove_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; }),
      fields.end());
}

bool is_grpc_type(std::string_view content_type) {
  const auto type = core::lower(content_type);
  return type == "application/grpc" || type.starts_with("application/grpc+") ||
         type.starts_with("application/grpc;");
}

bool is_grpc(const http::fields& request) {
  return is_grpc_type(request[http::field::content_type]);
}

h2::header_list grpc_answer_fields(const http::response<http::string_body>& answer,
                                   bool content_type) {
  const unsigned status = answer.result_int();
  std::string_view message = answer.body();
  while (!message.empty() && message.back() == '\n')
    message.remove_suffix(1);
  // https://github.com/grpc/grpc/blob/master/doc/statuscodes.md
  const char* code = status == 403                                     ? "7"
                     : status == 429 || status == 413 || status == 431 ? "8"
                     : status == 407                                   ? "16"
                     : status == 502 || status == 503 || status == 504 ? "14"
                                                                       : "13";
  // grpc-message: percent-encoded outside printable ASCII, and '%' itself (PROTOCOL-HTTP2.md).
  std::string encoded;
  static constexpr char hex[] = "0123456789ABCDEF";
  for (unsigned char ch : message) {
    if (ch < 0x20 || ch > 0x7e || ch == '%') {
      encoded += '%';
      encoded += hex[ch >> 4];
      encoded += hex[ch & 15];
    } else {
      encoded += static_cast<char>(ch);
    }
  }
  h2::header_list out;
  if (content_type) out.emplace_back("content-type", "application/grpc");
  out.emplace_back("grpc-status", code);
  out.emplace_back("grpc-message", std::move(encoded));
  for (const auto& f : answer) {
    auto name = core::lower(f.name_string());
    if (name == "proxy-status" || name == "x-airlock-reason" || name == "retry-after")
      out.emplace_back(std::move(name), std::string(f.value()));
  }
  return out;
}

}  // namespace airlock::proxy
