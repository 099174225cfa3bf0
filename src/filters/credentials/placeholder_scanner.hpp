#pragma once
// Finds the placeholders of secrets in a request body as it streams to a host those secrets
// are not bound to, so that a placeholder posted in a body is refused like one in a header.
// (Bodies are searched, never rewritten: a placeholder is swapped for its value only in
// headers and the target.)
//
// The last (longest placeholder - 1) bytes of each piece are kept, so a placeholder split
// across pieces is still found.
//
// @par Thread Safety
// One per request body, one thread at a time.

#include "net/host.hpp"
#include "policy/secrets.hpp"

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::credentials {

class placeholder_scanner {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  // Watches for the placeholders of the secrets that `host` is not bound to.
  placeholder_scanner(std::span<const policy::compiled_secret> secrets,
                      const net::normalized_host& host);

  // Whether there is anything to look for (else scan() always returns none).
  bool active() const noexcept { return !watched_.empty(); }

  // The next piece of the body: the index of a secret whose placeholder it completes, or none.
  std::size_t scan(std::string_view piece);

 private:
  std::span<const policy::compiled_secret> secrets_;
  std::vector<std::size_t> watched_;
  std::size_t keep_ = 0;  // longest placeholder - 1
  std::string tail_;
  std::string joined_;
};

}  // namespace airlock::filters::credentials
