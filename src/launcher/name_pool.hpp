#pragma once
// The jail's private address pool: the resolver hands each name one address of the pool (an
// IPv4 one from 198.18.0.0/15 and an IPv6 one from fd61:6972:6c6b::/64, by the same index),
// and the capture maps a connection to such an address back to the name. The addresses mean
// nothing outside the jail: nothing there routes them, and no packet to them leaves it.
//
// 198.18.0.0/15 is reserved for benchmarking (RFC 2544, RFC 6890): no real destination uses
// it, so an address from it can never be mistaken for one. The IPv6 pool is a unique local
// prefix (RFC 4193) spelling "airlk".
//
// A name keeps its address for the life of the pool (one `airlock run`); the pool is bounded
// and refuses new names once full. Not thread-safe: the relay's one thread owns it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::launcher {

class name_pool {
 public:
  static constexpr std::array<std::uint8_t, 4> v4_base = {198, 18, 0, 0};
  static constexpr std::uint32_t v4_prefix_length = 15;
  static constexpr std::array<std::uint8_t, 8> v6_prefix = {0xfd, 0x61, 0x69, 0x72,
                                                            0x6c, 0x6b, 0x00, 0x00};

  explicit name_pool(std::size_t capacity = 65536);

  // The index of name (assigned on first sight, from 1), or nullopt when the pool is full.
  std::optional<std::uint32_t> assign(std::string_view name);

  std::array<std::uint8_t, 4> v4_address(std::uint32_t index) const noexcept;
  std::array<std::uint8_t, 16> v6_address(std::uint32_t index) const noexcept;

  // Whether an address (network byte order) lies in the pool's range, handed out or not.
  static bool in_v4_pool(const std::array<std::uint8_t, 4>& a) noexcept;
  static bool in_v6_pool(const std::array<std::uint8_t, 16>& a) noexcept;

  // The name behind a pool address, or nullopt when the address was never handed out (or is
  // not in the pool at all).
  std::optional<std::string> name_of_v4(const std::array<std::uint8_t, 4>& a) const;
  std::optional<std::string> name_of_v6(const std::array<std::uint8_t, 16>& a) const;

  std::size_t size() const noexcept { return names_.size(); }

 private:
  std::optional<std::string> name_of(std::uint64_t index) const;

  std::size_t capacity_;
  std::vector<std::string> names_;  // index - 1 -> name
  std::unordered_map<std::string, std::uint32_t> indexes_;
};

}  // namespace airlock::launcher
