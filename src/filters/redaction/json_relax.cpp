#include "filters/redaction/json_relax.hpp"

#include "core/ascii.hpp"

#include <array>

namespace airlock::filters::redaction {
namespace {

// The value of a "\uXXXX" escape at the front of `s`, or -1.
long unicode_escape(std::string_view s) {
  if (s.size() < 6 || s[0] != '\\' || s[1] != 'u') return -1;
  long v = 0;
  for (std::size_t i = 2; i < 6; ++i) {
    const int d = core::hex_value(s[i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

bool is_high(long v) {
  return v >= 0xD800 && v <= 0xDBFF;
}
bool is_low(long v) {
  return v >= 0xDC00 && v <= 0xDFFF;
}

bool word_char(char c) {
  return core::is_alnum(c) || c == '_';
}

}  // namespace

bool relax_json(std::string_view json, std::string& out) {
  static constexpr std::array<std::string_view, 3> kNotFinite = {"-Infinity", "Infinity", "NaN"};
  out.clear();
  out.reserve(json.size());
  bool changed = false, in_string = false;
  std::size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (in_string) {
      if (c == '"') in_string = false;
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      const long v = unicode_escape(json.substr(i));
      if (v < 0) {  // another escape: it and the character it escapes, as written
        out.append(json.substr(i, 2));
        i += 2;
        continue;
      }
      const long next = is_high(v) ? unicode_escape(json.substr(i + 6)) : -1;
      if (is_high(v) && is_low(next)) {  // a pair: as written
        out.append(json.substr(i, 12));
        i += 12;
      } else if (is_high(v) || is_low(v)) {
        out.append("\\ufffd");
        changed = true;
        i += 6;
      } else {
        out.append(json.substr(i, 6));
        i += 6;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    if (c == '-' || c == 'I' || c == 'N') {
      for (const auto word : kNotFinite) {
        const bool starts_token = i == 0 || !word_char(json[i - 1]);
        const std::size_t end = i + word.size();
        if (starts_token && json.substr(i).starts_with(word) &&
            (end == json.size() || !word_char(json[end]))) {
          out.append("null");
          i = end;
          changed = replaced = true;
          break;
        }
      }
    }
    if (!replaced) {
      out.push_back(c);
      ++i;
    }
  }
  return changed;
}

}  // namespace airlock::filters::redaction
