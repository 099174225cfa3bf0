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

namespace {

// "YYYY-MM-DDTHH:MM:SS.mmmZ" at p, 24 bytes, two digits at a time.
constexpr std::size_t rfc3339_size = 24;
void format_rfc3339_utc(char* p, std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  constexpr sys_days min_day = year{0} / January / 1;
  constexpr sys_days max_day = year{9999} / December / 31;
  auto ms = floor<milliseconds>(t);
  if (ms < min_day) ms = time_point_cast<milliseconds>(min_day);
  if (ms >= max_day + days{1}) ms = time_point_cast<milliseconds>(max_day + days{1}) - 1ms;
  auto day = floor<days>(ms);
  year_month_day ymd{day};
  hh_mm_ss hms{ms - day};
  auto two = [&](char* at, unsigned v) {
    at[0] = static_cast<char>('0' + v / 10);
    at[1] = static_cast<char>('0' + v % 10);
  };
  const auto y = static_cast<unsigned>(static_cast<int>(ymd.year()));
  const auto milli = static_cast<unsigned>(hms.subseconds().count());
  two(p, y / 100);
  two(p + 2, y % 100);
  p[4] = '-';
  two(p + 5, static_cast<unsigned>(ymd.month()));
  p[7] = '-';
  two(p + 8, static_cast<unsigned>(ymd.day()));
  p[10] = 'T';
  two(p + 11, static_cast<unsigned>(hms.hours().count()));
  p[13] = ':';
  two(p + 14, static_cast<unsigned>(hms.minutes().count()));
  p[16] = ':';
  two(p + 17, static_cast<unsigned>(hms.seconds().count()));
  p[19] = '.';
  p[20] = static_cast<char>('0' + milli / 100);
  two(p + 21, milli % 100);
  p[23] = 'Z';
}

// Writes a line into `out` through a cursor: each piece is one bounds check and one memcpy of
// a size mostly known at compile time. With std::string::append per piece (an out-of-line
// call with its own checks, about 25 of them per line) the formatting was most of the audit
// line's cost. flush() trims `out` to what was written, for code that appends to it directly;
// resume() continues after it.
class line_writer {
 public:
  explicit line_writer(std::string& out) : out_(out), pos_(out.size()) {}
  template <std::size_t N>
  void literal(const char (&s)[N]) {
    std::memcpy(room(N - 1), s, N - 1);
    pos_ += N - 1;
  }
  void string(std::string_view s) {
    if (!needs_no_escaping(s)) {
      append_json_string(flush(), s);
      resume();
      return;
    }
    char* p = room(s.size() + 2);
    p[0] = '"';
    if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    pos_ += s.size() + 2;
  }
  void number(std::uint64_t v) {
    char* p = room(20);  // 18446744073709551615
    pos_ += static_cast<std::size_t>(std::to_chars(p, p + 20, v).ptr - p);
  }
  void padded(unsigned v, int width) {
    append_padded(flush(), v, width);
    resume();
  }
  void time(std::chrono::system_clock::time_point t) {
    format_rfc3339_utc(room(rfc3339_size), t);
    pos_ += rfc3339_size;
  }
  std::string& flush() {
    out_.resize(pos_);
    return out_;
  }
  void resume() { pos_ = out_.size(); }

 private:
  char* room(std::size_t n) {
    // Grows by more than asked, so that a line usually makes room once.
    if (out_.size() - pos_ < n) out_.resize(pos_ + n + 384);
    return out_.data() + pos_;
  }
  std::string& out_;
  std::size_t pos_;
};

// The keys most exchanges lack, each absent when empty.
void append_optional_keys(std::string& out, const audit_record& r) {
  auto key = [&](std::string_view k) {
    out.append(",\"");
    out.append(k);
    out.append("\":");
  };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    append_json_string(out, v);
  };
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
    out.append(",\"close_reply_code\":");
    append_int(out, w.close_reply_code);
    if (!w.refused_from.empty()) {
      out.append(",\"refused_from\":");
      append_json_string(out, w.refused_from);
    }
    out.push_back('}');
  }
}

}  // namespace

void append_rfc3339_utc(std::string& out, std::chrono::system_clock::time_point t) {
  char buf[rfc3339_size];
  format_rfc3339_utc(buf, t);
  out.append(buf, rfc3339_size);
}

void append_audit_line(std::string& out, const audit_record& r) {
  line_writer w(out);
  w.literal("{\"time\":\"");
  w.time(r.time);
  w.literal("\",\"agent\":");
  w.string(r.agent);
  w.literal(",\"method\":");
  w.string(r.method);
  w.literal(",\"scheme\":");
  w.string(r.scheme);
  w.literal(",\"host\":");
  w.string(r.host);
  w.literal(",\"port\":");
  w.number(r.port);
  w.literal(",\"path\":");
  w.string(r.path);
  w.literal(",\"protocol\":");
  w.string(r.protocol);
  if (!r.upstream_protocol.empty()) {
    w.literal(",\"upstream_protocol\":");
    w.string(r.upstream_protocol);
  }
  w.literal(",\"rule\":");
  if (r.rule.empty()) {
    w.literal("null");
  } else {
    w.string(r.rule);
  }
  w.literal(",\"decision\":");
  w.string(r.decision);
  w.literal(",\"reason\":");
  w.string(r.reason);
  w.literal(",\"detail\":");
  w.string(r.detail);
  w.literal(",\"status\":");
  w.number(r.status);
  w.literal(",\"bytes_in\":");
  w.number(r.bytes_in);
  w.literal(",\"bytes_out\":");
  w.number(r.bytes_out);
  // Milliseconds with three decimals from the integer microseconds: a plain decimal number
  // (Boost.JSON would print a double as 1.2345E1, which is valid JSON but hard to read).
  w.literal(",\"duration_ms\":");
  auto us = r.duration.count() < 0 ? 0 : static_cast<std::uint64_t>(r.duration.count());
  w.number(us / 1000);
  w.literal(".");
  w.padded(static_cast<unsigned>(us % 1000), 3);
  w.literal(",\"upstream\":");
  w.string(r.upstream);
  w.literal(",\"client\":");
  w.string(r.client);
  w.literal(",\"policy_version\":");
  w.string(r.policy_version);
  // What most exchanges lack (each absent when empty), with std::string's own appends.
  if (!r.redactions.empty() || !r.binary.empty() || !r.injected.empty() || !r.dlp.empty() ||
      !r.mcp.empty() || r.websocket) {
    append_optional_keys(w.flush(), r);
    w.resume();
  }
  w.literal("}\n");
  w.flush();
}

}  // namespace airlock::telemetry
