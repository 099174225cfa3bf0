#include "proxy/h1_request.hpp"

#include "core/ascii.hpp"
#include "net/http_framing.hpp"
#include "policy/snapshot.hpp"
#include "proxy/hop_by_hop.hpp"
#include "websocket/deflate.hpp"

#include <algorithm>

namespace airlock::proxy::h1 {
using core::errc;
using core::iequals;
using core::trim_ows;

namespace {

// The protocol a client asks to switch to, lower case; only an Upgrade announced in Connection
// counts (RFC 9110 section 7.8).
std::string requested_upgrade(const http::request_header<>& req) {
  auto conn = req[http::field::connection];
  if (conn.empty() || !req.count(http::field::upgrade)) return {};
  if (core::lower(conn).find("upgrade") == std::string::npos) return {};
  return core::lower(trim_ows(req[http::field::upgrade]));
}

// For the error message only: does an http:// URL that failed to parse carry a port that is not
// 1..65535 in plain decimal?
bool has_bad_port(std::string_view url) {
  auto start = url.find("://");
  if (start == std::string_view::npos) return false;
  auto authority = url.substr(start + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  auto close = authority.rfind(']');
  auto colon = authority.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close))
    return false;
  auto port = authority.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.front() == '0') return true;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return true;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value == 0 || value > 65535;
}

// CONNECT host:port; bad_port only when the host part is fine and the port is what is wrong.
std::optional<refusal> parse_connect_target(std::string_view target, filters::exchange& ex) {
  auto authority = net::parse_authority(target, 0, true);
  if (authority) {
    ex.target = std::move(*authority);
    return std::nullopt;
  }
  auto colon = target.rfind(':');
  auto host_part = colon == std::string_view::npos ? target : target.substr(0, colon);
  if (host_part.size() > 2 && host_part.front() == '[' && host_part.back() == ']')
    host_part = host_part.substr(1, host_part.size() - 2);
  const bool port_problem = target.find_first_of("/@") == std::string_view::npos &&
                            net::normalize_host(host_part).has_value();
  return refusal{port_problem ? errc::bad_port : errc::bad_request,
                 "CONNECT needs host:port (a name or IP literal and a port from 1 to 65535, "
                 "nothing else)",
                 false};
}

// Why a scheme is refused. Only a scheme a client may really send a proxy is named: any other
// is the agent's own text, which this refusal comes before DLP could read (a key written as the
// scheme would be repeated in the answer, its Proxy-Status and the audit record).
std::string unsupported_scheme_detail(std::string_view scheme) {
  static constexpr std::string_view known[] = {"https", "ws",   "wss",  "ftp",   "ftps",
                                               "sftp",  "file", "data", "gopher"};
  for (const auto name : known)
    if (iequals(scheme, name))
      return core::str_cat("scheme '", name, "' is not proxied; use CONNECT for https");
  return "the scheme is not proxied: only http:// URLs, and CONNECT for https";
}

// An absolute http:// URL at the proxy port.
std::optional<refusal> parse_absolute_target(std::string_view target, filters::exchange& ex) {
  if (!target.empty() && target.front() == '/')
    return refusal{errc::origin_form, "send the absolute URL (http://host/path) to the proxy",
                   true};
  auto url = net::parse_http_url(target);
  if (url) {
    ex.target = std::move(url->target);
    ex.path_and_query = std::move(url->path_and_query);
    return std::nullopt;
  }
  auto scheme_end = target.find("://");
  if (scheme_end != std::string_view::npos && !iequals(target.substr(0, scheme_end), "http"))
    return refusal{errc::unsupported_scheme,
                   unsupported_scheme_detail(target.substr(0, scheme_end)), true};
  if (has_bad_port(target))
    return refusal{errc::bad_port, "port must be a number from 1 to 65535", true};
  return refusal{errc::bad_request, "malformed request target", true};
}

// Host header value for the upstream: the port is left out when it is the scheme's default.
std::string host_header(const net::normalized_host& host, std::uint16_t port,
                        std::uint16_t default_port) {
  std::string h =
      host.kind == net::host_kind::ipv6 ? core::str_cat('[', host.text, ']') : host.text;
  if (port != default_port) h += core::str_cat(':', port);
  return h;
}

}  // namespace

std::uint32_t header_limit(const policy::model::limits& limits) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(limits.header_bytes, UINT32_MAX));
}

void prepare_head(request_parser& p, const policy::model::limits& limits) {
  p.header_limit(header_limit(limits));
  // The body limit is checked by hand once the target is known (so the refusal is recorded with
  // its host and path), then enforced by the parser while the body streams.
  p.body_limit(boost::none);
}

head_outcome head_read(boost::system::error_code ec, std::size_t n,
                       const boost::beast::flat_buffer& buffer,
                       const policy::model::limits& limits) {
  head_outcome out;
  // Beast holds the start line and the fields each to header_limit, so a head that arrives in
  // one read may be up to twice the limit (found by fuzz/http_request): the head's own size, as
  // read, is checked too.
  if (!ec && n > limits.header_bytes) ec = http::error::header_limit;
  if (!ec) return out;
  const bool cancelled = ec == boost::asio::error::operation_aborted;
  if ((ec == http::error::end_of_stream || ec == boost::asio::ssl::error::stream_truncated ||
       cancelled) &&
      buffer.size() == 0) {
    out.what = head_outcome::kind::closed;
  } else if (cancelled) {
    // The drain's end closed the connection while its head was arriving (the answer cannot
    // be written: the record says so, status 0).
    out.what = head_outcome::kind::refused;
    out.reason = core::errc::shutting_down;
    out.detail = "the proxy stopped while the request head was arriving";
  } else if (ec == boost::beast::error::timeout) {
    // The timeout closed the socket; nothing can be sent.
    out.what = head_outcome::kind::timed_out;
    out.reason = core::errc::head_timeout;
    out.detail = "request head not complete in time";
  } else {
    out.what = head_outcome::kind::refused;
    out.reason = ec == http::error::header_limit ? core::errc::header_too_large
                 : ec == http::error::body_limit ? core::errc::body_too_large
                                                 : core::errc::bad_request;
    out.detail =
        ec == http::error::header_limit ? core::str_cat("limit is ", limits.header_bytes, " bytes")
        : ec == http::error::body_limit ? core::str_cat("limit is ", limits.body_bytes, " bytes")
                                        : ec.message();
  }
  return out;
}

std::optional<refusal> parse_request(const request_parser& p, const net::authority* tunnel_target,
                                     const policy::model::limits& limits, filters::exchange& ex) {
  const auto& req = p.get();
  auto& rec = ex.record;
  rec.method = std::string(req.method_string());
  ex.has_body = p.chunked() || p.content_length().value_or(0) > 0;
  ex.content_length =
      p.content_length() ? std::optional<std::uint64_t>(*p.content_length()) : std::nullopt;

  std::size_t field_count = 0;
  for ([[maybe_unused]] const auto& f : req)
    ++field_count;
  if (field_count > limits.header_count)
    return refusal{errc::header_too_large,
                   core::str_cat("more than ", limits.header_count, " headers"), false};
  if (auto problem = net::framing_problem(req); !problem.empty())
    return refusal{errc::bad_request, std::string(problem), false};

  const std::string_view target = req.target();
  ex.connect = req.method() == http::verb::connect && !tunnel_target;
  if (tunnel_target) {
    if (req.method() == http::verb::connect || target.empty() || target.front() != '/')
      return refusal{errc::bad_request, "inside a tunnel only origin-form requests are allowed",
                     false};
    if (!net::target_bytes_ok(target))
      return refusal{errc::bad_request, std::string(bad_target_bytes), false};
    ex.in_tunnel = true;
    ex.target = *tunnel_target;
    ex.path_and_query = std::string(target);
  } else if (ex.connect) {
    rec.scheme = "connect";
    if (auto bad = parse_connect_target(target, ex)) return bad;
  } else if (auto bad = parse_absolute_target(target, ex)) {
    return bad;
  }
  rec.host = ex.target.host.text;
  rec.port = ex.target.port;
  ex.path = ex.path_and_query.substr(0, ex.path_and_query.find('?'));
  rec.path = ex.path;
  ex.upgrade = requested_upgrade(req);
  if (ex.content_length.value_or(0) > limits.body_bytes)
    return refusal{errc::body_too_large, core::str_cat("limit is ", limits.body_bytes, " bytes"),
                   false};
  ex.body_limit = limits.body_bytes;
  return std::nullopt;
}

std::string body_limit_detail(const filters::exchange& ex) {
  if (ex.rule && ex.body_limit < ex.snapshot->limits().body_bytes)
    return core::str_cat("rule ", ex.rule->name, " allows ", ex.body_limit, " bytes of body");
  return core::str_cat("limit is ", ex.body_limit, " bytes");
}

bool expects_continue(const http::request_header<>& req) {
  return iequals(trim_ows(req[http::field::expect]), "100-continue");
}

// The relay reads every frame, so the origin may agree only to extensions it understands:
// permessage-deflate (RFC 7692). Any other offer (whose RSV bits would mean something else)
// is left out.
static void offer_only_deflate(http::request<http::buffer_body>& req) {
  std::string offered;
  const auto [first, last] = req.equal_range(http::field::sec_websocket_extensions);
  for (auto it = first; it != last; ++it)
    offered += core::str_cat(offered.empty() ? "" : ", ", std::string_view(it->value()));
  req.erase(http::field::sec_websocket_extensions);
  const auto kept = websocket::deflate_offers(offered);
  if (!kept.empty()) req.set(http::field::sec_websocket_extensions, kept);
}

std::string rewrite_for_upstream(http::request<http::buffer_body>& req,
                                 const filters::exchange& ex) {
  const bool expect = expects_continue(req);
  strip_hop_by_hop(req);
  std::string upgrade;
  const auto& allowed = ex.rule->upgrades;
  if (!ex.upgrade.empty() &&
      std::find(allowed.begin(), allowed.end(), ex.upgrade.substr(0, ex.upgrade.find('/'))) !=
          allowed.end()) {
    upgrade = ex.upgrade;
    req.set(http::field::connection, "upgrade");
    req.set(http::field::upgrade, upgrade);
    if (upgrade == "websocket") offer_only_deflate(req);
  }
  if (expect) req.erase(http::field::expect);
  req.target(ex.path_and_query);
  req.set(http::field::host,
          host_header(ex.target.host, ex.target.port, ex.in_tunnel && !ex.tunnel_plain ? 443 : 80));
  req.version(11);
  req.keep_alive(true);
  return upgrade;
}

}  // namespace airlock::proxy::h1
