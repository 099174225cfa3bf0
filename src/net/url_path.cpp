#include "net/url_path.hpp"

namespace airlock::net {

bool has_dot_segment(std::string_view path) noexcept {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    int dots = 0;
    bool only_dots = !seg.empty();
    while (!seg.empty() && only_dots) {
      if (seg.front() == '.') {
        ++dots;
        seg.remove_prefix(1);
      } else if (seg.size() >= 3 && seg[0] == '%' && seg[1] == '2' &&
                 (seg[2] == 'e' || seg[2] == 'E')) {
        ++dots;
        seg.remove_prefix(3);
      } else {
        only_dots = false;
      }
    }
    if (only_dots && (dots == 1 || dots == 2)) return true;
    start = end + 1;
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
