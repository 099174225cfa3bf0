#include "tls/ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstring>

namespace airlock::tls {
namespace {

void free_keys(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<ticket_keys*>(ptr);
}

// The SSL_CTX ex_data slot that owns a context's keys (one index for the process).
int context_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, &free_keys);
  return index;
}

bool set_mac_key(EVP_MAC_CTX* mac, const std::array<unsigned char, 32>& key) {
  static char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key.data()),
                                        key.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}

}  // namespace

ticket_keys::ticket_keys(std::chrono::seconds period, std::function<clock::time_point()> now)
    : period_(period.count() > 0 ? period : default_period),
      now_(std::move(now)),
      aes_(EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr)) {}

ticket_keys::~ticket_keys() {
  wipe(current_);
  wipe(previous_);
  EVP_CIPHER_free(aes_);
}

bool ticket_keys::install(SSL_CTX* ctx, std::unique_ptr<ticket_keys> keys) {
  if (!keys || keys->aes_ == nullptr || context_index() < 0) return false;
  auto* old = static_cast<ticket_keys*>(SSL_CTX_get_ex_data(ctx, context_index()));
  if (SSL_CTX_set_ex_data(ctx, context_index(), keys.get()) != 1) return false;
  if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, &ticket_keys::callback) != 1) {
    SSL_CTX_set_ex_data(ctx, context_index(), old);
    return false;
  }
  SSL_CTX_set_timeout(ctx, static_cast<long>(keys->period_.count()));
  keys.release();  // owned by ctx now (free_keys)
  delete old;
  return true;
}

std::uint64_t ticket_keys::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

int ticket_keys::callback(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                          EVP_MAC_CTX* mac, int encrypt) {
  auto* self =
      static_cast<ticket_keys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), context_index()));
  // 0: no ticket is made, or the one offered is not read (a full handshake follows).
  if (self == nullptr) return 0;
  if (encrypt == 1) return self->encrypt(name, iv, cipher, mac);
  const int read = self->decrypt(name, iv, cipher, mac);
  // 2 also asks for a new ticket. OpenSSL's own keys renew every TLS 1.3 ticket used (a ticket
  // is for one use, RFC 8446 appendix C.4), so a client that resumes keeps resuming.
  return read == 1 && SSL_version(ssl) >= TLS1_3_VERSION ? 2 : read;
}

int ticket_keys::encrypt(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                         EVP_MAC_CTX* mac) {
  const int iv_length = EVP_CIPHER_get_iv_length(aes_);
  if (iv_length <= 0 || RAND_bytes(iv, iv_length) != 1) return 0;
  std::lock_guard lock(mutex_);
  if (!rotate_locked(now_())) return 0;
  std::memcpy(name, current_.name.data(), current_.name.size());
  const bool ok = EVP_EncryptInit_ex2(cipher, aes_, current_.aes.data(), iv, nullptr) == 1 &&
                  set_mac_key(mac, current_.hmac);
  return ok ? 1 : -1;
}

int ticket_keys::decrypt(const unsigned char* name, const unsigned char* iv, EVP_CIPHER_CTX* cipher,
                         EVP_MAC_CTX* mac) {
  std::lock_guard lock(mutex_);
  rotate_locked(now_());  // a retired key must not read anything, even with no ticket made since
  const auto matches = [name](const key& k) {
    return k.valid && CRYPTO_memcmp(name, k.name.data(), k.name.size()) == 0;
  };
  const key* k = matches(current_) ? &current_ : matches(previous_) ? &previous_ : nullptr;
  if (k == nullptr) return 0;  // made with a retired key, or by another proxy: full handshake
  if (EVP_DecryptInit_ex2(cipher, aes_, k->aes.data(), iv, nullptr) != 1 ||
      !set_mac_key(mac, k->hmac))
    return -1;
  // 2: valid, and a new ticket under the current key replaces it (RFC 5077 section 3.3).
  return k == &previous_ ? 2 : 1;
}

bool ticket_keys::rotate_locked(clock::time_point now) {
  if (!current_.valid || now - current_.made >= period_) {
    key next;
    if (!make_key(next, now)) {
      wipe(next);
      return false;
    }
    wipe(previous_);
    previous_ = current_;
    current_ = next;
    wipe(next);
    ++generation_;
  }
  // Made two periods ago: one to encrypt, one more to read what it encrypted.
  if (previous_.valid && now - previous_.made >= 2 * period_) wipe(previous_);
  return true;
}

bool ticket_keys::make_key(key& k, clock::time_point now) {
  if (RAND_bytes(k.name.data(), static_cast<int>(k.name.size())) != 1 ||
      RAND_priv_bytes(k.aes.data(), static_cast<int>(k.aes.size())) != 1 ||
      RAND_priv_bytes(k.hmac.data(), static_cast<int>(k.hmac.size())) != 1)
    return false;
  k.made = now;
  k.valid = true;
  return true;
}

void ticket_keys::wipe(key& k) {
  OPENSSL_cleanse(k.aes.data(), k.aes.size());
  OPENSSL_cleanse(k.hmac.data(), k.hmac.size());
  k.valid = false;
}

}  // namespace airlock::tls
