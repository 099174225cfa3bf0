#include "filters/redaction/content_coding.hpp"

namespace airlock::filters::redaction {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (x != b[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

content_coding parse_content_encoding(std::string_view value) noexcept {
  content_coding result = content_coding::identity;
  while (true) {
    const auto comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    if (!item.empty() && !iequals(item, "identity")) {
      content_coding c;
      if (iequals(item, "gzip") || iequals(item, "x-gzip"))
        c = content_coding::gzip;
      else if (iequals(item, "deflate"))
        c = content_coding::deflate;
      else
        return content_coding::unsupported;
      if (result != content_coding::identity) return content_coding::unsupported;  // stacked
      result = c;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return result;
}

std::string_view to_string(content_coding c) noexcept {
  switch (c) {
    case content_coding::identity:
      return "identity";
    case content_coding::gzip:
      return "gzip";
    case content_coding::deflate:
      return "deflate";
    case content_coding::unsupported:
      break;
  }
  return "unsupported";
}

}  // namespace airlock::filters::redaction
