#pragma once
// Two measures of a run of bytes that tell data from text (DLP, data-like host names).

#include <string_view>

namespace airlock::core {

// Share of bytes that are printable ASCII or whitespace (0..1; 0 for an empty string).
double printable_share(std::string_view s) noexcept;

// Shannon entropy of the bytes, in bits per byte.
double shannon_entropy(std::string_view s) noexcept;

}  // namespace airlock::core
