#pragma once
// The values a reload replaced: a rotated file secret's old value, or the value of a secret the
// policy no longer names. A rotated credential often stays valid at its provider for a while
// (a grace period, or until someone revokes it), and an origin may still send it back (an echo,
// a cache, a key listing): every redaction engine built within `keep` of the rotation redacts it
// too, under its secret's name. Kept in memory only (as secret_value: wiped when dropped), at
// most `per_secret` values per name, the newest first.
//
// @par Thread Safety
// carry() may be called from any thread; calls are serialised.

#include "filters/redaction/redactor.hpp"
#include "policy/secret_value.hpp"

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::redaction {

class retired_secrets {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::hours keep{24};
  static constexpr std::size_t per_secret = 4;

  // Remembers `next`'s values as the current ones; a value the last call saw that `next` no
  // longer holds (under any name) is retired as of `now`. Returns the retired values still
  // within `keep`, none equal to one of `next`'s.
  std::vector<literal_secret> carry(const policy::snapshot& next, clock::time_point now);

 private:
  struct value {
    std::string name;
    policy::secret_value bytes;
    clock::time_point retired;
  };
  std::mutex mu_;
  std::vector<std::pair<std::string, policy::secret_value>> current_;  // name, value
  std::vector<value> retired_;                                         // newest first
};

}  // namespace airlock::filters::redaction
