#include "core/errc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

namespace airlock::core {
namespace {

constexpr auto count = static_cast<int>(errc::count_);

// The RFC 9209 section 2.3 Proxy Error Types registry: every token Airlock emits must be one
// of these, or a client that parses Proxy-Status would not understand it.
const std::set<std::string_view>& rfc9209_tokens() {
  static const std::set<std::string_view> tokens{
      "dns_timeout",
      "dns_error",
      "destination_not_found",
      "destination_unavailable",
      "destination_ip_prohibited",
      "destination_ip_unroutable",
      "connection_refused",
      "connection_terminated",
      "connection_timeout",
      "connection_read_timeout",
      "connection_write_timeout",
      "connection_limit_reached",
      "tls_protocol_error",
      "tls_certificate_error",
      "tls_alert_received",
      "http_request_error",
      "http_request_denied",
      "http_response_incomplete",
      "http_response_header_section_size",
      "http_response_header_size",
      "http_response_body_size",
      "http_response_trailer_section_size",
      "http_response_trailer_size",
      "http_response_transfer_coding",
      "http_response_content_coding",
      "http_response_timeout",
      "http_upgrade_failed",
      "http_protocol_error",
      "proxy_internal_response",
      "proxy_internal_error",
      "proxy_configuration_error",
      "proxy_loop_detected",
  };
  return tokens;
}

bool is_snake_case(std::string_view s) {
  if (s.empty() || s.front() == '_' || s.back() == '_') return false;
  if (s.front() < 'a' || s.front() > 'z') return false;
  char prev = 0;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || (c == '_' && prev == '_')) return false;
    prev = c;
  }
  return true;
}

TEST(Errc, OkIsTwoHundredWithoutToken) {
  const auto& i = info(errc::ok);
  EXPECT_EQ(i.http_status, 200u);
  EXPECT_EQ(i.name, "ok");
  EXPECT_TRUE(i.proxy_status_token.empty());
  EXPECT_FALSE(i.message.empty());
}

TEST(Errc, EveryValueHasStatusRegisteredTokenNameAndMessage) {
  for (int v = 1; v < count; ++v) {
    const auto e = static_cast<errc>(v);
    const auto& i = info(e);
    SCOPED_TRACE(std::string(i.name) + " (" + std::to_string(v) + ")");
    EXPECT_GE(i.http_status, 400u);
    EXPECT_LE(i.http_status, 599u);
    EXPECT_TRUE(rfc9209_tokens().count(i.proxy_status_token)) << i.proxy_status_token;
    EXPECT_TRUE(is_snake_case(i.name)) << i.name;
    EXPECT_FALSE(i.message.empty());
    // The message goes into a header (via quoting) and a one-line body: no line breaks.
    EXPECT_EQ(i.message.find_first_of("\r\n"), std::string_view::npos);
    EXPECT_EQ(name(e), i.name);
  }
}

TEST(Errc, NamesAreUnique) {
  std::set<std::string_view> seen;
  for (int v = 0; v < count; ++v) {
    auto n = info(static_cast<errc>(v)).name;
    EXPECT_TRUE(seen.insert(n).second) << "duplicate name " << n;
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(count));
}

TEST(Errc, SelectedEntriesMatchTheirMeaning) {
  // Spot checks of the mapping the rest of the proxy relies on.
  struct row {
    errc e;
    unsigned status;
    std::string_view token;
    std::string_view name;
  };
  const row rows[] = {
      {errc::host_denied, 403, "http_request_denied", "host_denied"},
      {errc::destination_ip_prohibited, 403, "destination_ip_prohibited",
       "destination_ip_prohibited"},
      {errc::auth_required, 407, "http_request_denied", "auth_required"},
      {errc::bad_request, 400, "http_request_error", "bad_request"},
      {errc::header_too_large, 431, "http_request_error", "header_too_large"},
      {errc::body_too_large, 413, "http_request_error", "body_too_large"},
      {errc::head_timeout, 408, "http_request_error", "head_timeout"},
      {errc::too_many_connections, 503, "connection_limit_reached", "too_many_connections"},
      {errc::dns_error, 502, "dns_error", "dns_error"},
      {errc::dns_timeout, 504, "dns_timeout", "dns_timeout"},
      {errc::connect_refused, 502, "connection_refused", "connect_refused"},
      {errc::connect_timeout, 504, "connection_timeout", "connect_timeout"},
      {errc::upstream_timeout, 504, "http_response_timeout", "upstream_timeout"},
      {errc::upstream_tls_failed, 502, "tls_certificate_error", "upstream_tls_failed"},
      {errc::decision_timeout, 503, "proxy_internal_response", "decision_timeout"},
      {errc::audit_unavailable, 503, "proxy_internal_response", "audit_unavailable"},
      {errc::internal_error, 500, "proxy_internal_error", "internal_error"},
      {errc::shutting_down, 503, "proxy_internal_response", "shutting_down"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(r.name));
    EXPECT_EQ(info(r.e).http_status, r.status);
    EXPECT_EQ(info(r.e).proxy_status_token, r.token);
    EXPECT_EQ(info(r.e).name, r.name);
  }
}

TEST(Errc, OutOfRangeIsInternalError) {
  const auto& internal = info(errc::internal_error);
  for (int v : {count, count + 1, 1000, -1, 0x7fffffff}) {
    const auto& i = info(static_cast<errc>(v));
    EXPECT_EQ(&i, &internal) << v;
    EXPECT_EQ(i.http_status, 500u) << v;
  }
  EXPECT_EQ(name(static_cast<errc>(count)), "internal_error");
}

TEST(Errc, ErrorCodeRoundTrip) {
  for (int v = 0; v < count; ++v) {
    const auto e = static_cast<errc>(v);
    boost::system::error_code ec = e;  // implicit, through is_error_code_enum
    EXPECT_EQ(ec, make_error_code(e));
    EXPECT_EQ(ec.value(), v);
    EXPECT_EQ(&ec.category(), &airlock_category());
    EXPECT_EQ(static_cast<errc>(ec.value()), e);
    EXPECT_EQ(ec.message(), std::string(info(e).message));
    EXPECT_EQ(static_cast<bool>(ec), v != 0) << "only ok is falsy";
  }
  EXPECT_STREQ(airlock_category().name(), "airlock");
  // Out of range through the category too: no crash, the internal_error message.
  boost::system::error_code odd(count + 5, airlock_category());
  EXPECT_EQ(odd.message(), std::string(info(errc::internal_error).message));
}

TEST(Errc, DistinctFromOtherCategories) {
  boost::system::error_code ours = errc::dns_error;
  boost::system::error_code generic(static_cast<int>(errc::dns_error),
                                    boost::system::generic_category());
  EXPECT_NE(ours, generic);
}

}  // namespace
}  // namespace airlock::core
