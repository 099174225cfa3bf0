#include "net/data_like_host.hpp"

#include "core/text_stats.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace airlock::net {
namespace {

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}
bool is_base32(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7');
}
int nibble(char c) {  // of a lower-case hex digit
  return c <= '9' ? c - '0' : c - 'a' + 10;
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::optional<std::string_view> judge_label(std::string_view l) {
  const bool hex = std::all_of(l.begin(), l.end(), is_hex);
  const auto digits = static_cast<std::size_t>(std::count_if(l.begin(), l.end(), is_digit));
  if (hex && l.size() >= 32) return "hex label";
  if (hex && l.size() >= 12 && l.size() % 2 == 0) {
    // Hex that decodes to text: "4a6f686e446f65" is "JohnDoe".
    std::string d;
    for (std::size_t i = 0; i < l.size(); i += 2)
      d.push_back(static_cast<char>(nibble(l[i]) * 16 + nibble(l[i + 1])));
    if (core::printable_share(d) == 1.0) return "hex label";
  }
  if (l.size() >= 16 && std::all_of(l.begin(), l.end(), is_base32) && digits >= 2)
    return "base32 label";
  if (l.size() >= 24 && digits >= 3 && digits < l.size() &&
      core::shannon_entropy(l) >= std::min(4.0, 0.8 * std::log2(static_cast<double>(l.size()))))
    return "high-entropy label";
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> data_like_host(std::string_view host) {
  std::vector<std::string_view> labels;
  for (std::size_t pos = 0; pos <= host.size();) {
    auto dot = host.find('.', pos);
    if (dot == std::string_view::npos) dot = host.size();
    labels.push_back(host.substr(pos, dot - pos));
    pos = dot + 1;
  }
  if (labels.size() <= 2) return std::nullopt;
  const std::size_t left = labels.size() - 2;  // labels left of the registrable part
  std::size_t total = 0;
  for (std::size_t i = 0; i < left; ++i) {
    if (auto why = judge_label(labels[i])) return why;
    total += labels[i].size();
  }
  if (left >= 6 || (left >= 4 && total >= 28)) return "chained labels";
  if (total >= 64) return "long name";
  return std::nullopt;
}

}  // namespace airlock::net
