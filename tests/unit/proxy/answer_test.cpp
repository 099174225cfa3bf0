#include "proxy/answer.hpp"

#include "core/str_cat.hpp"

#include <gtest/gtest.h>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>
#include <random>
#include <sstream>
#include <string>

namespace airlock::proxy {
namespace {

using core::errc;

// The bytes a client would receive.
std::string wire(const http::response<http::string_body>& res) {
  std::ostringstream os;
  os << res;
  return os.str();
}

// Parses the wire form back, as an agent's HTTP client would.
std::optional<http::response<http::string_body>> reparse(const std::string& bytes) {
  http::response_parser<http::string_body> p;
  p.eager(true);
  boost::system::error_code ec;
  p.put(boost::asio::buffer(bytes), ec);
  if (ec || !p.is_done()) return std::nullopt;
  return p.release();
}

// The sf-string of `details="..."` at the end of a Proxy-Status value (RFC 8941 section
// 3.3.3), unescaped; nullopt when it is not a valid sf-string that ends the value.
std::optional<std::string> details_param(std::string_view value) {
  auto at = value.find("; details=\"");
  if (at == std::string_view::npos) return std::nullopt;
  std::string out;
  for (std::size_t i = at + 11; i < value.size(); ++i) {
    char c = value[i];
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) return std::nullopt;  // sf-string is printable ASCII only
    if (c == '\\') {
      if (++i == value.size()) return std::nullopt;
      if (value[i] != '"' && value[i] != '\\') return std::nullopt;
      out.push_back(value[i]);
    } else if (c == '"') {
      if (i + 1 != value.size()) return std::nullopt;  // details is the last parameter
      return out;
    } else {
      out.push_back(c);
    }
  }
  return std::nullopt;  // unterminated
}

TEST(QuoteForHeader, PlainTextUnchanged) {
  EXPECT_EQ(quote_for_header(""), "");
  EXPECT_EQ(quote_for_header("api.example.com resolves to 10.0.0.1 (private)"),
            "api.example.com resolves to 10.0.0.1 (private)");
  EXPECT_EQ(quote_for_header("~!@#$%^&*()_+{}|:<>?`-=[];',./ "), "~!@#$%^&*()_+{}|:<>?`-=[];',./ ");
}

TEST(QuoteForHeader, EscapesQuoteAndBackslash) {
  EXPECT_EQ(quote_for_header(R"(a"b)"), R"(a\"b)");
  EXPECT_EQ(quote_for_header(R"(a\b)"), R"(a\\b)");
  EXPECT_EQ(quote_for_header(R"(\")"), R"(\\\")");
  EXPECT_EQ(quote_for_header(R"(trailing\)"), R"(trailing\\)");
}

TEST(QuoteForHeader, DropsControlCharacters) {
  EXPECT_EQ(quote_for_header("a\r\nX-Evil: 1"), "aX-Evil: 1");
  EXPECT_EQ(quote_for_header("a\nb\rc"), "abc");
  EXPECT_EQ(quote_for_header(std::string_view("a\0b", 3)), "ab");
  EXPECT_EQ(quote_for_header("a\tb\x7f"
                             "c\x1b[31m"),
            "abc[31m");
  std::string all_controls;
  for (int c = 0; c < 0x20; ++c)
    all_controls.push_back(static_cast<char>(c));
  all_controls.push_back('\x7f');
  EXPECT_EQ(quote_for_header(all_controls), "");
}

TEST(QuoteForHeader, NonAsciiBecomesQuestionMark) {
  EXPECT_EQ(quote_for_header("caf\xc3\xa9"), "caf??");
  EXPECT_EQ(quote_for_header("\x80\xff"), "??");
  // A UTF-8 sequence whose bytes contain 0x0d/0x0a-like low bits cannot smuggle a line break.
  EXPECT_EQ(quote_for_header("\xc4\x8d\xe5\x8a\x8a"), "?????");
}

TEST(MakeAnswer, DeniedHostWithDetail) {
  auto res = make_answer(errc::host_denied, "no rule for evil.test", 11, true);
  EXPECT_EQ(res.result_int(), 403u);
  EXPECT_EQ(res.version(), 11u);
  EXPECT_EQ(res["Proxy-Status"],
            "airlock; error=http_request_denied; details=\"no rule for evil.test\"");
  EXPECT_EQ(res["X-Airlock-Reason"], "host_denied");
  EXPECT_EQ(res.body(), "airlock: no rule allows this host (host_denied): no rule for evil.test\n");
  EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
  EXPECT_EQ(res[http::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ(res[http::field::cache_control], "no-store");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(res.count(http::field::proxy_authenticate), 0u);
}

TEST(MakeAnswer, EmptyDetailUsesTheMessage) {
  auto res = make_answer(errc::dns_error, "", 11, true);
  EXPECT_EQ(res.result_int(), 502u);
  EXPECT_EQ(res["Proxy-Status"],
            "airlock; error=dns_error; details=\"name could not be resolved\"");
  EXPECT_EQ(res.body(), "airlock: name could not be resolved (dns_error)\n");
}

TEST(MakeAnswer, KeepAliveFlagAndVersion) {
  auto close11 = make_answer(errc::bad_request, "x", 11, false);
  EXPECT_FALSE(close11.keep_alive());
  EXPECT_EQ(close11[http::field::connection], "close");

  auto keep10 = make_answer(errc::bad_request, "x", 10, true);
  EXPECT_EQ(keep10.version(), 10u);
  EXPECT_TRUE(keep10.keep_alive());
  EXPECT_EQ(keep10[http::field::connection], "keep-alive");

  auto close10 = make_answer(errc::bad_request, "x", 10, false);
  EXPECT_FALSE(close10.keep_alive());

  // Any other version is answered as HTTP/1.1 (the proxy speaks nothing else).
  EXPECT_EQ(make_answer(errc::bad_request, "x", 20, true).version(), 11u);
  EXPECT_EQ(make_answer(errc::bad_request, "x", 9, true).version(), 11u);
}

TEST(MakeAnswer, ProxyAuthenticateOnlyOn407) {
  auto res = make_answer(errc::auth_required, "", 11, true);
  EXPECT_EQ(res.result_int(), 407u);
  ASSERT_EQ(res.count(http::field::proxy_authenticate), 1u);
  auto challenge = std::string(res[http::field::proxy_authenticate]);
  EXPECT_NE(challenge.find("Basic realm=\"airlock\""), std::string::npos) << challenge;
  for (int v = 0; v < static_cast<int>(errc::count_); ++v) {
    auto e = static_cast<errc>(v);
    if (e == errc::auth_required || e == errc::ok) continue;
    auto other = make_answer(e, "", 11, true);
    EXPECT_EQ(other.count(http::field::proxy_authenticate), 0u) << core::name(e);
  }
}

TEST(MakeAnswer, EveryReasonRoundTripsOverTheWire) {
  for (int v = 1; v < static_cast<int>(errc::count_); ++v) {
    auto e = static_cast<errc>(v);
    const auto& i = core::info(e);
    SCOPED_TRACE(std::string(i.name));
    auto res = make_answer(e, "", 11, v % 2 == 0);
    auto back = reparse(wire(res));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->result_int(), i.http_status);
    EXPECT_EQ((*back)["X-Airlock-Reason"], i.name);
    EXPECT_EQ((*back)["Proxy-Status"], core::str_cat("airlock; error=", i.proxy_status_token,
                                                     "; details=\"", i.message, '"'));
    EXPECT_EQ(back->body(), res.body());
    EXPECT_EQ(back->keep_alive(), v % 2 == 0);
  }
}

TEST(MakeAnswer, DetailCannotSplitTheHeaderOrTheBody) {
  const std::string evil =
      "x\"; error=ok\r\nX-Injected: 1\r\n\r\nHTTP/1.1 200 OK\r\n\\\"\xe2\x80\xa8\x85";
  auto res = make_answer(errc::path_denied, evil, 11, true);
  auto bytes = wire(res);
  EXPECT_EQ(bytes.find("\r\nX-Injected"), std::string::npos) << bytes;
  auto back = reparse(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->count("X-Injected"), 0u);
  EXPECT_EQ(back->result_int(), 403u);
  auto details = details_param((*back)["Proxy-Status"]);
  ASSERT_TRUE(details) << (*back)["Proxy-Status"];
  EXPECT_EQ(*details,
            "x\"; error=ok"
            "X-Injected: 1HTTP/1.1 200 OK\\\"???"
            "?");
  EXPECT_EQ(back->body().find('\r'), std::string::npos);
  EXPECT_EQ(back->body().find('\n'), back->body().size() - 1) << "one line only";
}

TEST(MakeAnswer, RandomDetailsAlwaysGiveAValidHeader) {
  std::mt19937 rng(9209);
  std::uniform_int_distribution<int> byte(0, 255), len(0, 64);
  for (int round = 0; round < 2000; ++round) {
    std::string detail(static_cast<std::size_t>(len(rng)), '\0');
    for (auto& c : detail)
      c = static_cast<char>(byte(rng));
    auto res = make_answer(errc::upstream_error, detail, 11, true);
    auto back = reparse(wire(res));
    ASSERT_TRUE(back) << "round " << round;
    // Exactly the headers make_answer sets, nothing smuggled in.
    EXPECT_EQ(std::distance(back->begin(), back->end()), std::distance(res.begin(), res.end()));
    auto details = details_param((*back)["Proxy-Status"]);
    ASSERT_TRUE(details) << "round " << round << ": " << (*back)["Proxy-Status"];
    // What the agent reads is the detail minus controls, with non-ASCII as '?'.
    std::string expected;
    for (char c : detail) {
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) continue;
      expected.push_back(u >= 0x80 ? '?' : c);
    }
    if (expected.empty() && detail.empty())
      expected = std::string(core::info(errc::upstream_error).message);
    EXPECT_EQ(*details, expected) << "round " << round;
  }
}

}  // namespace
}  // namespace airlock::proxy
