#include "filters/dlp/seed_phrase.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace airlock::filters::dlp {
namespace {

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == '+' || c == '-' ||
         c == '_';
}

// The list's words by their first two letters: [begin, end) in the sorted list, so a lookup
// compares a word with the two or three words that share its start, not eleven (every word of
// a scanned body is looked up).
struct two_letter_index {
  std::array<std::uint16_t, 26 * 26 + 1> begin{};
  two_letter_index() {
    std::size_t w = 0;
    for (std::size_t b = 0; b < 26 * 26; ++b) {
      begin[b] = static_cast<std::uint16_t>(w);
      while (w < bip39_english.size() && bucket(bip39_english[w]) == b)
        ++w;
    }
    begin[26 * 26] = static_cast<std::uint16_t>(bip39_english.size());
  }
  static std::size_t bucket(std::string_view w) {
    return static_cast<std::size_t>(w[0] - 'a') * 26 + static_cast<std::size_t>(w[1] - 'a');
  }
};

// Index of a lower-case word in the (sorted) list, or -1. Every listed word has 3 to 8 letters.
int word_index(std::string_view w) {
  if (w.size() < 3 || w.size() > 8) return -1;
  static const two_letter_index index;
  const std::size_t b = two_letter_index::bucket(w);
  for (std::size_t i = index.begin[b]; i < index.begin[b + 1]; ++i)
    if (bip39_english[i] == w) return static_cast<int>(i);
  return -1;
}

// BIP-39 "Generating the mnemonic", read backwards: 11 bits per word; the last N/3 bits are the
// first bits of SHA-256 of the entropy before them.
bool checksum_ok(const int* idx, std::size_t n) {
  std::vector<std::uint8_t> bits;
  bits.reserve(n * 11);
  for (std::size_t i = 0; i < n; ++i)
    for (int b = 10; b >= 0; --b)
      bits.push_back(static_cast<std::uint8_t>((idx[i] >> b) & 1));
  const std::size_t cs = n / 3, ent = n * 11 - cs;
  std::vector<unsigned char> entropy(ent / 8, 0);
  for (std::size_t i = 0; i < ent; ++i)
    entropy[i / 8] = static_cast<unsigned char>(entropy[i / 8] | (bits[i] << (7 - i % 8)));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(entropy.data(), entropy.size(), digest);
  for (std::size_t i = 0; i < cs; ++i)
    if (((digest[i / 8] >> (7 - i % 8)) & 1) != bits[ent + i]) return false;
  return true;
}

bool run_has_phrase(const std::vector<int>& run) {
  for (std::size_t n : {24u, 21u, 18u, 15u, 12u}) {
    if (run.size() < n) continue;
    for (std::size_t start = 0; start + n <= run.size(); ++start)
      if (checksum_ok(run.data() + start, n)) return true;
  }
  return false;
}

}  // namespace

bool has_seed_phrase(std::string_view text) {
  // The shortest phrase: 12 words of at least 3 letters and 11 separators.
  if (text.size() < 12 * 3 + 11) return false;
  std::vector<int> run;  // consecutive list words
  std::string word;
  std::size_t i = 0;
  // Bounded: each byte is looked at once; each run of k >= 12 words is checked O(5k) times.
  auto end_run = [&] {
    const bool found = run.size() >= 12 && run_has_phrase(run);
    run.clear();
    return found;
  };
  while (i < text.size()) {
    if (!is_letter(text[i])) {
      if (!is_separator(text[i]) && end_run()) return true;
      ++i;
      continue;
    }
    word.clear();
    while (i < text.size() && is_letter(text[i]) && word.size() <= 8)
      word.push_back(static_cast<char>(text[i++] | 0x20));
    const bool long_word = i < text.size() && is_letter(text[i]);
    while (i < text.size() && is_letter(text[i]))
      ++i;
    const int k = long_word ? -1 : word_index(word);
    if (k < 0) {
      if (end_run()) return true;
    } else {
      run.push_back(k);
    }
  }
  return end_run();
}

}  // namespace airlock::filters::dlp
