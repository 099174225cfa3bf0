#pragma once
// Small credential helpers shared by the loader (policy version, token hashes) and identify():
// SHA-256 in hex, a constant-time comparison and base64 (RFC 4648 section 4):
// a strict decoder and the encoder injected Basic credentials use.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::policy {

// Lower-case hex of SHA-256(data): 64 characters.
std::string sha256_hex(std::string_view data);

// Compares without an early exit on the first difference (only the length leaks).
bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// Standard alphabet, '=' padding required, no whitespace; nullopt on anything else
// (including non-zero bits in the unused part of the last character).
std::optional<std::string> base64_decode(std::string_view text);

// Standard alphabet with '=' padding (what base64_decode accepts; HTTP Basic credentials).
std::string base64_encode(std::string_view data);

}  // namespace airlock::policy
