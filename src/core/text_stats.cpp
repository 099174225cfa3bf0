#include "core/text_stats.hpp"

#include <array>
#include <cmath>
#include <cstddef>

namespace airlock::core {

double printable_share(std::string_view s) noexcept {
  if (s.empty()) return 0;
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c >= 0x20 && c < 0x7F) || c == '\n' || c == '\r' || c == '\t') ++n;
  return static_cast<double>(n) / static_cast<double>(s.size());
}

double shannon_entropy(std::string_view s) noexcept {
  if (s.empty()) return 0;
  std::array<std::size_t, 256> counts{};
  for (unsigned char c : s)
    ++counts[c];
  double h = 0;
  const auto n = static_cast<double>(s.size());
  for (std::size_t k : counts) {
    if (k == 0) continue;
    const double p = static_cast<double>(k) / n;
    h -= p * std::log2(p);
  }
  return h;
}

}  // namespace airlock::core
