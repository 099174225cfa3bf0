#include "net/url_path.hpp"

namespace airlock::net {

namespace {

// The length of the separator at path[i]: "/", "\\", "%2f" or "%5c" (any case), else 0.
std::size_t separator_at(std::string_view path, std::size_t i) noexcept {
  if (path[i] == '/' || path[i] == '\\') return 1;
  if (path[i] == '%' && i + 2 < path.size()) {
    const char hi = path[i + 1], lo = path[i + 2];
    if ((hi == '2' && (lo == 'f' || lo == 'F')) || (hi == '5' && (lo == 'c' || lo == 'C')))
      return 3;
  }
  return 0;
}

// "." or ".." (a dot also as "%2e"), before any ";" parameters: Tomcat and other servlet
// containers drop a segment's parameters (RFC 3986 section 3.3) before they remove dot
// segments, so "..;x" is "..".
bool dot_segment(std::string_view seg) noexcept {
  seg = seg.substr(0, seg.find(';'));
  int dots = 0;
  while (!seg.empty()) {
    if (seg.front() == '.') {
      seg.remove_prefix(1);
    } else if (seg.size() >= 3 && seg[0] == '%' && seg[1] == '2' &&
               (seg[2] == 'e' || seg[2] == 'E')) {
      seg.remove_prefix(3);
    } else {
      return false;
    }
    ++dots;
  }
  return dots == 1 || dots == 2;
}

}  // namespace

bool has_dot_segment(std::string_view path) noexcept {
  std::size_t start = 0;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    const std::size_t sep = i < path.size() ? separator_at(path, i) : 1;
    if (sep == 0) continue;
    if (dot_segment(path.substr(start, i - start))) return true;
    i += sep - 1;
    start = i + 1;
  }
  return false;
}

bool has_hidden_separator(std::string_view path) noexcept {
  // Windows servers (and some frameworks on any system) read a backslash as a slash.
  if (path.find('\\') != std::string_view::npos) return true;
  for (std::size_t i = path.find('%'); i != std::string_view::npos && i + 2 < path.size();
       i = path.find('%', i + 1)) {
    const char hi = path[i + 1], lo = path[i + 2];
    if ((hi == '2' && (lo == 'f' || lo == 'F')) || (hi == '5' && (lo == 'c' || lo == 'C')))
      return true;
  }
  return false;
}

}  // namespace airlock::net
