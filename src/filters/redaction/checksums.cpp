// The checksummed identifiers of the DLP classes (issue 16): IBAN (ISO 13616, mod 97-10 of
// ISO 7064), Bitcoin addresses (Base58Check of P2PKH/P2SH, BIP-173 Bech32 and BIP-350 Bech32m)
// and WIF private keys (Base58Check, version 0x80). A checksum is what keeps random tokens of
// the same alphabet from counting as findings.

#include "filters/redaction/validators.hpp"

#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace airlock::filters::redaction::validators {
namespace {

bool is_alnum(int c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_token(int c) {
  return is_alnum(c) || c == '_';
}

constexpr std::string_view kBase58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// Base58 to bytes (big-endian, leading '1's as zero bytes); nullopt on a foreign byte.
std::optional<std::vector<std::uint8_t>> base58_decode(std::string_view s) {
  std::vector<std::uint8_t> out;  // little-endian accumulator
  for (char ch : s) {
    const auto pos = kBase58.find(ch);
    if (pos == std::string_view::npos) return std::nullopt;
    unsigned carry = static_cast<unsigned>(pos);
    for (auto& b : out) {
      carry += static_cast<unsigned>(b) * 58;
      b = static_cast<std::uint8_t>(carry & 0xff);
      carry >>= 8;
    }
    for (; carry != 0; carry >>= 8)
      out.push_back(static_cast<std::uint8_t>(carry & 0xff));
  }
  for (std::size_t i = 0; i < s.size() && s[i] == '1'; ++i)
    out.push_back(0);
  return std::vector<std::uint8_t>(out.rbegin(), out.rend());
}

}  // namespace

std::optional<std::vector<std::uint8_t>> base58check_payload(std::string_view s) {
  auto bytes = base58_decode(s);
  if (!bytes || bytes->size() < 5) return std::nullopt;
  const std::size_t n = bytes->size() - 4;
  std::array<unsigned char, SHA256_DIGEST_LENGTH> h1{}, h2{};
  SHA256(bytes->data(), n, h1.data());
  SHA256(h1.data(), h1.size(), h2.data());
  for (std::size_t i = 0; i < 4; ++i)
    if (h2[i] != (*bytes)[n + i]) return std::nullopt;
  bytes->resize(n);
  return bytes;
}

bool iban_ok(std::string_view text) noexcept {
  std::string s;
  for (char c : text)
    if (c != ' ') s.push_back(c);
  // ISO 13616: 15..34 characters; move the first four to the end, letters as 10..35, mod 97.
  if (s.size() < 15 || s.size() > 34) return false;
  const std::string r = s.substr(4) + s.substr(0, 4);
  unsigned rem = 0;
  for (char c : r) {
    if (c >= '0' && c <= '9') {
      rem = (rem * 10 + static_cast<unsigned>(c - '0')) % 97;
    } else if (c >= 'A' && c <= 'Z') {
      const unsigned v = static_cast<unsigned>(c - 'A') + 10;
      rem = (rem * 100 + v) % 97;
    } else {
      return false;
    }
  }
  return rem == 1;
}

bool bech32_ok(std::string_view s) noexcept {
  // BIP-173: hrp "1" data; checksum polymod 1 (Bech32) or 0x2bc830a3 (Bech32m, BIP-350).
  const auto sep = s.rfind('1');
  if (sep == std::string_view::npos || sep == 0 || sep + 7 > s.size()) return false;
  constexpr std::string_view charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
  constexpr std::array<std::uint32_t, 5> gen = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                                0x2a1462b3};
  std::uint32_t chk = 1;
  auto step = [&](std::uint32_t v) {
    const std::uint32_t top = chk >> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (std::size_t i = 0; i < 5; ++i)
      if ((top >> i) & 1) chk ^= gen[i];
  };
  const std::string_view hrp = s.substr(0, sep);
  for (char c : hrp)
    step(static_cast<std::uint32_t>(static_cast<unsigned char>(c)) >> 5);
  step(0);
  for (char c : hrp)
    step(static_cast<std::uint32_t>(static_cast<unsigned char>(c)) & 31);
  for (char c : s.substr(sep + 1)) {
    const auto v = charset.find(c);
    if (v == std::string_view::npos) return false;
    step(static_cast<std::uint32_t>(v));
  }
  return chk == 1 || chk == 0x2bc830a3;
}

verdict iban(const candidate& c) {
  if (!token_starts_at(c, is_alnum) || !token_ends_at(c, is_alnum)) return verdict::reject();
  return iban_ok(c.span()) ? verdict::accept(c) : verdict::reject();
}

verdict bitcoin_address(const candidate& c) {
  if (!token_starts_at(c, is_token) || !token_ends_at(c, is_token)) return verdict::reject();
  const std::string_view s = c.span();
  if (s.starts_with("bc1") || s.starts_with("tb1"))
    return bech32_ok(s) ? verdict::accept(c) : verdict::reject();
  auto payload = base58check_payload(s);
  // Version 0x00 (P2PKH), 0x05 (P2SH), 0x6f/0xc4 (testnet), then a 20-byte hash.
  if (!payload || payload->size() != 21) return verdict::reject();
  const auto v = (*payload)[0];
  return v == 0x00 || v == 0x05 || v == 0x6f || v == 0xc4 ? verdict::accept(c) : verdict::reject();
}

verdict wif_key(const candidate& c) {
  if (!token_starts_at(c, is_token) || !token_ends_at(c, is_token)) return verdict::reject();
  auto payload = base58check_payload(c.span());
  // Version 0x80 (0xef testnet), 32 key bytes, optionally 0x01 for a compressed key.
  if (!payload || (payload->size() != 33 && payload->size() != 34)) return verdict::reject();
  const auto v = (*payload)[0];
  return v == 0x80 || v == 0xef ? verdict::accept(c) : verdict::reject();
}

}  // namespace airlock::filters::redaction::validators
