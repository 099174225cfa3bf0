#include "launcher/name_pool.hpp"

#include <algorithm>

namespace airlock::launcher {
namespace {

constexpr std::uint32_t v4_size = 1u << (32 - name_pool::v4_prefix_length);

std::uint32_t to_u32(const std::array<std::uint8_t, 4>& a) {
  return (std::uint32_t{a[0]} << 24) | (std::uint32_t{a[1]} << 16) | (std::uint32_t{a[2]} << 8) |
         a[3];
}

}  // namespace

name_pool::name_pool(std::size_t capacity)
    // Index 0 is the network address itself, and the last one would be 198.19.255.255.
    : capacity_(std::min<std::size_t>(capacity, v4_size - 2)) {}

std::optional<std::uint32_t> name_pool::assign(std::string_view name) {
  if (auto it = indexes_.find(std::string(name)); it != indexes_.end()) return it->second;
  if (names_.size() >= capacity_) return std::nullopt;
  names_.emplace_back(name);
  const auto index = static_cast<std::uint32_t>(names_.size());
  indexes_.emplace(names_.back(), index);
  return index;
}

std::array<std::uint8_t, 4> name_pool::v4_address(std::uint32_t index) const noexcept {
  const std::uint32_t a = to_u32(v4_base) + index;
  return {static_cast<std::uint8_t>(a >> 24), static_cast<std::uint8_t>(a >> 16),
          static_cast<std::uint8_t>(a >> 8), static_cast<std::uint8_t>(a)};
}

std::array<std::uint8_t, 16> name_pool::v6_address(std::uint32_t index) const noexcept {
  std::array<std::uint8_t, 16> a{};
  std::copy(v6_prefix.begin(), v6_prefix.end(), a.begin());
  a[12] = static_cast<std::uint8_t>(index >> 24);
  a[13] = static_cast<std::uint8_t>(index >> 16);
  a[14] = static_cast<std::uint8_t>(index >> 8);
  a[15] = static_cast<std::uint8_t>(index);
  return a;
}

bool name_pool::in_v4_pool(const std::array<std::uint8_t, 4>& a) noexcept {
  const std::uint32_t mask = ~std::uint32_t{0} << (32 - v4_prefix_length);
  return (to_u32(a) & mask) == to_u32(v4_base);
}

bool name_pool::in_v6_pool(const std::array<std::uint8_t, 16>& a) noexcept {
  return std::equal(v6_prefix.begin(), v6_prefix.end(), a.begin());
}

std::optional<std::string> name_pool::name_of(std::uint64_t index) const {
  if (index == 0 || index > names_.size()) return std::nullopt;
  return names_[index - 1];
}

std::optional<std::string> name_pool::name_of_v4(const std::array<std::uint8_t, 4>& a) const {
  if (!in_v4_pool(a)) return std::nullopt;
  return name_of(to_u32(a) - to_u32(v4_base));
}

std::optional<std::string> name_pool::name_of_v6(const std::array<std::uint8_t, 16>& a) const {
  if (!in_v6_pool(a)) return std::nullopt;
  std::uint64_t index = 0;
  for (std::size_t i = 8; i < 16; ++i)
    index = (index << 8) | a[i];
  return name_of(index);
}

}  // namespace airlock::launcher
