#include "policy/token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdint>

namespace airlock::policy {
namespace {

// Fetched once: EVP_sha256() makes OpenSSL 3 look the implementation up in its provider store
// on every call (a lock and a hash-table probe), which was most of the cost of hashing a
// Bearer token per request. The fetched object is immutable and safe to share across threads.
const EVP_MD* sha256_md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  const EVP_MD* type = sha256_md();
  if (type == nullptr || EVP_Digest(data.data(), data.size(), md, &size, type, nullptr) != 1) {
    // Cannot happen with the default provider; an empty hash never equals a configured one,
    // so callers fail closed.
    return {};
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(digits[md[i] >> 4]);
    out.push_back(digits[md[i] & 0x0f]);
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

int base64_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++padding;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int v = 0;
      if (c == '=') {
        // Padding only at the very end, in the last one or two positions.
        if (!last || j < 4 - padding) return std::nullopt;
      } else {
        v = base64_value(c);
        if (v < 0) return std::nullopt;
      }
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    const std::size_t bytes = last ? 3 - padding : 3;
    // Canonical encoding only: the bits below the last byte must be zero (RFC 4648 3.5).
    if (bytes == 1 && (group & 0xffff) != 0) return std::nullopt;
    if (bytes == 2 && (group & 0xff) != 0) return std::nullopt;
    out.push_back(static_cast<char>((group >> 16) & 0xff));
    if (bytes >= 2) out.push_back(static_cast<char>((group >> 8) & 0xff));
    if (bytes == 3) out.push_back(static_cast<char>(group & 0xff));
  }
  return out;
}

std::string base64_encode(std::string_view data) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const std::uint32_t g = static_cast<std::uint32_t>(static_cast<unsigned char>(data[i])) << 16 |
                            static_cast<std::uint32_t>(static_cast<unsigned char>(data[i + 1]))
                                << 8 |
                            static_cast<unsigned char>(data[i + 2]);
    out += {alphabet[g >> 18], alphabet[(g >> 12) & 63], alphabet[(g >> 6) & 63], alphabet[g & 63]};
  }
  if (const std::size_t rest = data.size() - i; rest > 0) {
    std::uint32_t g = static_cast<std::uint32_t>(static_cast<unsigned char>(data[i])) << 16;
    if (rest == 2) g |= static_cast<std::uint32_t>(static_cast<unsigned char>(data[i + 1])) << 8;
    out += alphabet[g >> 18];
    out += alphabet[(g >> 12) & 63];
    out += rest == 2 ? alphabet[(g >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace airlock::policy
