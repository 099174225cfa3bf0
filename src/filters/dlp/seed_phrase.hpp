#pragma once
// Crypto wallet seed phrases (BIP-39): 12, 15, 18, 21 or 24 words of the 2048-word English list
// whose last word carries a checksum (the first N/3 bits of SHA-256 of the entropy). Checking
// the checksum is what keeps ordinary English (most list words are common ones) from counting.

#include <array>
#include <string_view>

namespace airlock::filters::dlp {

// The BIP-39 English list, in order (generated at build time from Debian's python3-mnemonic).
extern const std::array<std::string_view, 2048> bip39_english;

// Whether `text` holds a valid seed phrase: words separated by whitespace, ',', '+', '-' or
// '_' (any case), with a correct checksum.
bool has_seed_phrase(std::string_view text);

}  // namespace airlock::filters::dlp
