#include "telemetry/audit_format.hpp"

#include <boost/json/serializer.hpp>

#include <charconv>
#include <cstdint>
#include <cstring>

namespace airlock::telemetry {
namespace {

template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc{} ? end : buf);
}

// Zero-padded to `width` digits; v must be non-negative.
void append_padded(std::string& out, unsigned v, int width) {
  char buf[12];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc{}) return;
  for (auto n = end - buf; n < width; ++n)
    out.push_back('0');
  out.append(buf, end);
}

// Length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one (RFC 3629
// section 4, the table of well-formed byte sequences).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

void append_serialized(std::string& out, std::string_view s) {
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(s.data(), s.size()));
  while (!sr.done()) {
    // Serialize straight into `out`: grow, let Boost.JSON fill, trim to what it wrote.
    std::size_t old = out.size();
    std::size_t chunk = s.size() + 16 > 256 ? s.size() + 16 : 256;
    out.resize(old + chunk);
    auto written = sr.read(out.data() + old, chunk);
    out.resize(old + written.size());
  }
}

// True when no byte of `s` is a control character, '"', '\\' or outside ASCII. Eight bytes at a
// time ("determine if a word has a byte less than n", Bit Twiddling Hacks: exact for n <= 128);
// a byte at a time this was the audit line's largest cost per request.
bool needs_no_escaping(std::string_view s) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  auto has_zero = [&](std::uint64_t v) { return (v - ones) & ~v & highs; };
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if ((w & highs) | ((w - 0x20 * ones) & ~w & highs) | has_zero(w ^ (0x22 * ones)) |
        has_zero(w ^ (0x5C * ones)))
      return false;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return false;
  }
  return true;
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void append_json_string(std::string& out, std::string_view s) {
  // Most values (methods, hosts, agent names) need no escaping at all: copy them as they are.
  if (needs_no_escaping(s)) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
  if (is_valid_utf8(s)) {
    append_serialized(out, s);
    return;
  }
  // Boost.JSON's serializer escapes quotes, backslashes and control characters but copies
  // other bytes as they are, so a stray byte from a request path would make the line invalid
  // JSON. Replace each byte that does not start a well-formed sequence by U+FFFD.
  std::string clean;
  clean.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      clean.append("\xEF\xBF\xBD");
      ++i;
    } else {
      clean.append(s.substr(i, n));
      i += n;
    }
  }
  append_serialized(out, clean);
}

void append_rfc3339_utc(std::string& out, std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  constexpr sys_days min_day = year{0} / January / 1;
  constexpr sys_days max_day = year{9999} / December / 31;
  auto ms = floor<milliseconds>(t);
  if (ms < min_day) ms = time_point_cast<milliseconds>(min_day);
  if (ms >= max_day + days{1}) ms = time_point_cast<milliseconds>(max_day + days{1}) - 1ms;
  auto day = floor<days>(ms);
  year_month_day ymd{day};
  hh_mm_ss hms{ms - day};
  append_padded(out, static_cast<unsigned>(static_cast<int>(ymd.year())), 4);
  out.push_back('-');
  append_padded(out, static_cast<unsigned>(ymd.month()), 2);
  out.push_back('-');
  append_padded(out, static_cast<unsigned>(ymd.day()), 2);
  out.push_back('T');
  append_padded(out, static_cast<unsigned>(hms.hours().count()), 2);
  out.push_back(':');
  append_padded(out, static_cast<unsigned>(hms.minutes().count()), 2);
  out.push_back(':');
  append_padded(out, static_cast<unsigned>(hms.seconds().count()), 2);
  out.push_back('.');
  append_padded(out, static_cast<unsigned>(hms.subseconds().count()), 3);
  out.push_back('Z');
}

void append_audit_line(std::string& out, const audit_record& r) {
  bool first = true;
  auto key = [&](std::string_view k) {
    out.append(first ? "\"" : ",\"");
    first = false;
    out.append(k);
    out.append("\":");
  };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    append_json_string(out, v);
  };
  auto num = [&](std::string_view k, std::uint64_t v) {
    key(k);
    append_int(out, v);
  };

  out.push_back('{');
  key("time");
  out.push_back('"');
  append_rfc3339_utc(out, r.time);
  out.push_back('"');
  str("agent", r.agent);
  str("method", r.method);
  str("scheme", r.scheme);
  str("host", r.host);
  num("port", r.port);
  str("path", r.path);
  str("protocol", r.protocol);
  if (!r.upstream_protocol.empty()) str("upstream_protocol", r.upstream_protocol);
  key("rule");
  if (r.rule.empty()) {
    out.append("null");
  } else {
    append_json_string(out, r.rule);
  }
  str("decision", r.decision);
  str("reason", r.reason);
  str("detail", r.detail);
  num("status", r.status);
  num("bytes_in", r.bytes_in);
  num("bytes_out", r.bytes_out);
  // Milliseconds with three decimals from the integer microseconds: a plain decimal number
  // (Boost.JSON would print a double as 1.2345E1, which is valid JSON but hard to read).
  key("duration_ms");
  auto us = r.duration.count() < 0 ? 0 : static_cast<std::uint64_t>(r.duration.count());
  append_int(out, us / 1000);
  out.push_back('.');
  append_padded(out, static_cast<unsigned>(us % 1000), 3);
  str("upstream", r.upstream);
  str("client", r.client);
  str("policy_version", r.policy_version);
  if (!r.redactions.empty()) {
    key("redactions");
    out.push_back('{');
    for (std::size_t i = 0; i < r.redactions.size(); ++i) {
      if (i) out.push_back(',');
      append_json_string(out, r.redactions[i].first);
      out.push_back(':');
      append_int(out, r.redactions[i].second);
    }
    out.push_back('}');
  }
  if (!r.binary.empty()) {
    str("binary", r.binary);
    str("binary_sha256", r.binary_sha256);
    key("binary_ancestors");
    out.push_back('[');
    for (std::size_t i = 0; i < r.binary_ancestors.size(); ++i) {
      if (i) out.push_back(',');
      append_json_string(out, r.binary_ancestors[i]);
    }
    out.push_back(']');
  }
  if (!r.injected.empty()) {
    key("injected");
    out.push_back('[');
    for (std::size_t i = 0; i < r.injected.size(); ++i) {
      if (i) out.push_back(',');
      append_json_string(out, r.injected[i]);
    }
    out.push_back(']');
  }
  if (!r.dlp.empty()) {
    key("dlp");
    out.push_back('[');
    for (std::size_t i = 0; i < r.dlp.size(); ++i) {
      if (i) out.push_back(',');
      out.append("{\"class\":");
      append_json_string(out, r.dlp[i].cls);
      out.append(",\"location\":");
      append_json_string(out, r.dlp[i].location);
      out.append(",\"action\":");
      append_json_string(out, r.dlp[i].action);
      out.push_back('}');
    }
    out.push_back(']');
  }
  if (!r.mcp.empty()) {
    key("mcp");
    out.push_back('[');
    for (std::size_t i = 0; i < r.mcp.size(); ++i) {
      if (i) out.push_back(',');
      out.append("{\"method\":");
      append_json_string(out, r.mcp[i].method);
      out.append(",\"tool\":");
      append_json_string(out, r.mcp[i].tool);
      out.push_back('}');
    }
    out.push_back(']');
  }
  if (r.websocket) {
    const auto& w = *r.websocket;
    key("websocket");
    out.append("{\"client_messages\":");
    append_int(out, w.client_messages);
    out.append(",\"origin_messages\":");
    append_int(out, w.origin_messages);
    out.append(",\"close_code\":");
    append_int(out, w.close_code);
    if (!w.closed_by.empty()) {
      out.append(",\"closed_by\":");
      append_json_string(out, w.closed_by);
    }
    if (!w.refused_from.empty()) {
      out.append(",\"refused_from\":");
      append_json_string(out, w.refused_from);
    }
    out.push_back('}');
  }
  out.append("}\n");
}

}  // namespace airlock::telemetry
