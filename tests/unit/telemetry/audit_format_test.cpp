#include "telemetry/audit_format.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace airlock::telemetry {
namespace {

using namespace std::chrono_literals;
using std::chrono::sys_days;

std::string rfc3339(std::chrono::system_clock::time_point t) {
  std::string out;
  append_rfc3339_utc(out, t);
  return out;
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(AuditFormat, EveryByteThatNeedsEscapingIsFoundAtEveryPosition) {
  // The plain check reads eight bytes at a time: each kind of byte at each place of a word and
  // of the tail must still be escaped (the line parses back to the same text), and a stray byte
  // outside ASCII replaced (the line stays valid JSON).
  const std::vector<std::string> specials{"\"", "\\", std::string(1, '\0'), "\x1f", "\n", "\xff"};
  for (const auto& special : specials) {
    for (std::size_t len = 1; len <= 19; ++len) {
      for (std::size_t at = 0; at + special.size() <= len; ++at) {
        std::string text(len - special.size(), 'a');
        text.insert(at, special);
        const auto line = json_string(text);
        EXPECT_NE(line, '"' + text + '"') << "copied as it is: " << line;
        boost::system::error_code ec;
        const auto parsed = boost::json::parse(line, ec);
        ASSERT_FALSE(ec) << line;
        if (special != "\xff") {
          EXPECT_EQ(parsed.as_string(), text) << line;
        }
      }
    }
  }
  const std::string plain = "GET example.test /path?q=1 ~!#$%&'()*+,-./:;<=>?@[]^_`{|}";
  EXPECT_EQ(json_string(plain), '"' + plain + '"');
}

TEST(AuditFormat, Rfc3339KnownInstants) {
  using namespace std::chrono;
  EXPECT_EQ(rfc3339(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339(sys_days{2024y / February / 29} + 23h + 59min + 59s + 999ms),
            "2024-02-29T23:59:59.999Z");
  // Sub-millisecond parts are truncated, not rounded up into the next second.
  EXPECT_EQ(rfc3339(sys_days{2000y / January / 1} + 999999us), "2000-01-01T00:00:00.999Z");
  // Before the epoch: floor, not truncation toward zero.
  EXPECT_EQ(rfc3339(system_clock::time_point{} - 1ms), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(rfc3339(system_clock::time_point{} - 1us), "1969-12-31T23:59:59.999Z");
}

TEST(AuditFormat, Rfc3339ExtremesKeepTheFormat) {
  // libstdc++'s system_clock counts int64 nanoseconds (years 1677..2262); whatever the range,
  // the extremes must still give "YYYY-MM-DDTHH:MM:SS.mmmZ".
  using namespace std::chrono;
  for (auto t : {system_clock::time_point::min(), system_clock::time_point::max()}) {
    std::string s = rfc3339(t);
    ASSERT_EQ(s.size(), 24u) << s;
    EXPECT_EQ(s[4], '-');
    EXPECT_EQ(s[10], 'T');
    EXPECT_EQ(s[19], '.');
    EXPECT_EQ(s[23], 'Z');
  }
}

TEST(AuditFormat, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9"));          // é
  EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC"));      // €
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xFF"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
  EXPECT_FALSE(is_valid_utf8(std::string_view("a\xC3", 2)));
}

TEST(AuditFormat, JsonStringEscapesAndRepairs) {
  EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_string("line\nbreak\ttab"), R"("line\nbreak\ttab")");
  EXPECT_EQ(json_string(std::string_view("nul\0x", 5)), R"("nul\u0000x")");
  EXPECT_EQ(json_string("\x01\x1f"), R"("\u0001\u001f")");
  EXPECT_EQ(json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  // Each byte that does not start a well-formed sequence becomes U+FFFD.
  EXPECT_EQ(json_string("a\xFF"
                        "b\xC0\xAF"),
            "\"a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD\"");
  // A long string crosses the serializer's chunk size.
  std::string long_value(100000, '"');
  std::string out = json_string(long_value);
  EXPECT_EQ(out.size(), 2 + 2 * long_value.size());
  EXPECT_EQ(boost::json::parse(out).as_string(), long_value);
}

TEST(AuditFormat, LineHasAllKeysInOrderAndTypes) {
  using namespace std::chrono;
  audit_record r;
  r.time = sys_days{2024y / May / 1} + 12h + 34min + 56s + 789ms;
  r.agent = "coder";
  r.method = "GET";
  r.scheme = "https";
  r.host = "api.github.com";
  r.port = 443;
  r.path = "/repos/a/b";
  r.rule = "github";
  r.decision = "allow";
  r.reason = "ok";
  r.detail = "";
  r.status = 200;
  r.bytes_in = 12;
  r.bytes_out = 18446744073709551615ull;
  r.duration = 12345us;
  r.upstream = "140.82.112.6:443";
  r.client = "127.0.0.1:50000";
  r.policy_version = "sha256:abc";
  std::string line;
  append_audit_line(line, r);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line, R"({"time":"2024-05-01T12:34:56.789Z","agent":"coder","method":"GET",)"
                  R"("scheme":"https","host":"api.github.com","port":443,"path":"/repos/a/b",)"
                  R"("protocol":"http/1.1",)"
                  R"("rule":"github","decision":"allow","reason":"ok","detail":"","status":200,)"
                  R"("bytes_in":12,"bytes_out":18446744073709551615,"duration_ms":12.345,)"
                  R"("upstream":"140.82.112.6:443","client":"127.0.0.1:50000",)"
                  R"("policy_version":"sha256:abc"})"
                  "\n");
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.size(), 19u);
  EXPECT_TRUE(v.at("port").is_int64() || v.at("port").is_uint64());
  EXPECT_DOUBLE_EQ(v.at("duration_ms").to_number<double>(), 12.345);
  EXPECT_EQ(v.at("bytes_out").as_uint64(), 18446744073709551615ull);
}

TEST(AuditFormat, AppendsAfterWhatTheStringHoldsWhateverItsLength) {
  // The line is written through a cursor that makes room ahead: what `out` held stays, long
  // values grow it as often as needed, and nothing of the room made ahead is left over.
  audit_record r;
  const std::string long_path = "/" + std::string(5000, 'p');
  const std::string long_detail(700, 'd');
  const std::pair<std::string_view, std::uint64_t> hits[] = {{"email", 2}};
  r.agent = "coder";
  r.path = long_path;
  r.detail = long_detail;
  r.redactions = hits;
  std::string alone;
  append_audit_line(alone, r);
  std::string line = "previous line\n";
  append_audit_line(line, r);
  EXPECT_EQ(line, "previous line\n" + alone);
  EXPECT_EQ(alone.find('\n'), alone.size() - 1);
  auto v = boost::json::parse(alone).as_object();
  EXPECT_EQ(v.at("path").as_string(), long_path);
  EXPECT_EQ(v.at("detail").as_string(), long_detail);
  EXPECT_EQ(v.at("redactions").as_object().at("email").to_number<std::uint64_t>(), 2u);
  EXPECT_NE(alone.find(R"("redactions":{"email":2}})"), std::string::npos) << alone;
}

TEST(AuditFormat, RedactionsAndInjectedSecretsByNameOnly) {
  audit_record r;
  const std::pair<std::string_view, std::uint64_t> hits[] = {{"secret:github", 3}, {"email", 1}};
  const std::string_view injected[] = {"github", "quote\"d"};
  r.redactions = hits;
  r.injected = injected;
  std::string line;
  append_audit_line(line, r);
  EXPECT_NE(
      line.find(R"("redactions":{"secret:github":3,"email":1},"injected":["github","quote\"d"]})"),
      std::string::npos)
      << line;
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.at("redactions").as_object().at("email").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(v.at("injected").as_array().size(), 2u);
  // Absent when empty (the line of an exchange without credentials keeps its 18 keys).
  audit_record plain;
  line.clear();
  append_audit_line(line, plain);
  EXPECT_EQ(line.find("redactions"), std::string::npos);
  EXPECT_EQ(line.find("injected"), std::string::npos);
}

TEST(AuditFormat, TheProgramWhenKnown) {
  audit_record r;
  const std::string ancestors[] = {"/usr/bin/dash", "[weird \"comm\"]"};
  r.binary = "/usr/bin/curl";
  r.binary_sha256 = "ab";
  r.binary_ancestors = ancestors;
  std::string line;
  append_audit_line(line, r);
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.at("binary").as_string(), "/usr/bin/curl");
  EXPECT_EQ(v.at("binary_sha256").as_string(), "ab");
  ASSERT_EQ(v.at("binary_ancestors").as_array().size(), 2u);
  EXPECT_EQ(v.at("binary_ancestors").as_array()[1].as_string(), "[weird \"comm\"]");
  audit_record none;  // no program: no keys (the 18 of every line)
  line.clear();
  append_audit_line(line, none);
  EXPECT_EQ(line.find("binary"), std::string::npos);
}

TEST(AuditFormat, TheProtocolAndAWebsocketSummary) {
  audit_record r;
  r.protocol = "websocket";
  r.websocket = audit_record::websocket_summary{3, 2, 1000, "client", "origin", 1008};
  std::string line;
  append_audit_line(line, r);
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.at("protocol").as_string(), "websocket");
  const auto& w = v.at("websocket").as_object();
  EXPECT_EQ(w.at("client_messages").as_int64(), 3);
  EXPECT_EQ(w.at("origin_messages").as_int64(), 2);
  EXPECT_EQ(w.at("close_code").as_int64(), 1000);
  EXPECT_EQ(w.at("closed_by").as_string(), "client");
  EXPECT_EQ(w.at("close_reply_code").as_int64(), 1008);
  EXPECT_EQ(w.at("refused_from").as_string(), "origin");
  audit_record plain;  // the protocol always (HTTP/1.1 unless set); no summary unless set
  line.clear();
  append_audit_line(line, plain);
  EXPECT_EQ(boost::json::parse(line).as_object().at("protocol").as_string(), "http/1.1");
  EXPECT_EQ(line.find("websocket"), std::string::npos);
}

TEST(AuditFormat, EmptyRuleIsNullAndDefaultsAreValid) {
  audit_record r;  // everything default: empty strings, zero numbers, epoch
  std::string line;
  append_audit_line(line, r);
  auto v = boost::json::parse(line).as_object();
  EXPECT_TRUE(v.at("rule").is_null());
  EXPECT_EQ(v.at("agent").as_string(), "");
  EXPECT_EQ(v.at("duration_ms").to_number<double>(), 0.0);
  EXPECT_NE(line.find(R"("duration_ms":0.000,)"), std::string::npos);
}

TEST(AuditFormat, NegativeDurationIsZeroAndSubMillisecondKeepsDigits) {
  audit_record r;
  r.duration = std::chrono::microseconds(-5);
  std::string line;
  append_audit_line(line, r);
  EXPECT_NE(line.find(R"("duration_ms":0.000,)"), std::string::npos);
  line.clear();
  r.duration = std::chrono::microseconds(7);
  append_audit_line(line, r);
  EXPECT_NE(line.find(R"("duration_ms":0.007,)"), std::string::npos);
}

TEST(AuditFormat, HostileFieldsStayOneValidLine) {
  audit_record r;
  std::string detail = "quote\" backslash\\ newline\n cr\r nul";
  detail.push_back('\0');
  detail += " del\x7f bell\x07 bad\xFF\xFE end \xE2\x80\xA8";  // U+2028 stays as is (valid)
  r.detail = detail;
  r.path = "/\x80\x81/../\"}{\n";
  r.rule = "\n";
  r.agent = "}\n{\"agent\":\"root\"";
  std::string line;
  append_audit_line(line, r);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto v = boost::json::parse(line).as_object();
  EXPECT_EQ(v.at("agent").as_string(), "}\n{\"agent\":\"root\"");
  EXPECT_EQ(v.at("rule").as_string(), "\n");
  std::string expected_detail = "quote\" backslash\\ newline\n cr\r nul";
  expected_detail.push_back('\0');
  expected_detail += " del\x7f bell\x07 bad\xEF\xBF\xBD\xEF\xBF\xBD end \xE2\x80\xA8";
  EXPECT_EQ(std::string(v.at("detail").as_string()), expected_detail);
  EXPECT_EQ(std::string(v.at("path").as_string()), "/\xEF\xBF\xBD\xEF\xBF\xBD/../\"}{\n");
}

}  // namespace
}  // namespace airlock::telemetry
