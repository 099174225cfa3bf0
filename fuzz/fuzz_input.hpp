#pragma once
// Helpers shared by the fuzz targets: a deterministic split plan drawn from the input itself,
// so that a crash file replays exactly (libFuzzer inputs are the only source of randomness).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace airlock::fuzz {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, and good enough to scatter split points.
class rng {
 public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t s_;
};

// Takes the first byte (if any) off `data` as a small configuration value.
inline std::uint8_t take_byte(std::string_view& data) {
  if (data.empty()) return 0;
  auto b = static_cast<std::uint8_t>(data.front());
  data.remove_prefix(1);
  return b;
}

// Cut points that split `size` bytes into pieces: mostly small pieces, sometimes single bytes,
// sometimes large ones, always in increasing order and ending at `size`.
inline std::vector<std::size_t> split_points(std::size_t size, std::uint64_t seed) {
  rng r(seed);
  std::vector<std::size_t> cuts;
  std::size_t at = 0;
  while (at < size) {
    std::size_t step = 1;
    switch (r.below(4)) {
      case 0:
        step = 1;
        break;
      case 1:
        step = 1 + r.below(8);
        break;
      case 2:
        step = 1 + r.below(64);
        break;
      default:
        step = 1 + r.below(size);
        break;
    }
    at = std::min(size, at + step);
    cuts.push_back(at);
  }
  return cuts;
}

// A property violation: print what differs and abort, so libFuzzer saves the input.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace airlock::fuzz
