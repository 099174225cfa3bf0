#pragma once
// Session ticket keys of the client-facing context, rotated. A ticket is the session's secret
// encrypted under a key only the proxy holds (RFC 5077 section 4, the same form in TLS 1.3);
// OpenSSL's own key is made once per context and kept as long as the context (until the CA
// changes), so one stolen key would open every ticket ever issued, and in TLS 1.2, whose
// ticket carries the master secret, the traffic of those sessions too. Here a key encrypts new
// tickets for one period, is kept one more period to decrypt (the ticket is then renewed),
// and is then wiped (RFC 5077 section 5.5, RFC 8446 section 8 on limiting ticket lifetime).
// The session timeout (the lifetime a TLS 1.3 ticket announces) is set to one period, so a
// ticket is never announced longer than its key can read it.
//
// Tickets stay stateless: nothing per session is stored.
//
// Thread safety: the callback runs on whichever thread handshakes; a mutex guards the keys
// (held for a key copy, once per ticket made or read).

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace airlock::tls {

class ticket_keys {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds default_period{std::chrono::hours(1)};

  // now: the clock rotation follows (tests pass their own).
  explicit ticket_keys(std::chrono::seconds period = default_period,
                       std::function<clock::time_point()> now = &clock::now);
  ~ticket_keys();
  ticket_keys(const ticket_keys&) = delete;
  ticket_keys& operator=(const ticket_keys&) = delete;

  // Makes ctx encrypt and decrypt its tickets with keys from `keys`, which ctx then owns (freed
  // with it; one installed before is freed at once). Sets ctx's session timeout to the period.
  // False (ctx unchanged, keys freed) when OpenSSL refuses.
  static bool install(SSL_CTX* ctx, std::unique_ptr<ticket_keys> keys);

  // How many keys were made so far (the first one included); for tests.
  std::uint64_t generation() const;

 private:
  struct key {
    std::array<unsigned char, 16> name{};  // tells which key a ticket was made with
    std::array<unsigned char, 32> aes{};   // AES-256-CBC, as OpenSSL's own tickets
    std::array<unsigned char, 32> hmac{};  // HMAC-SHA256
    clock::time_point made{};
    bool valid = false;
  };
  static int callback(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                      EVP_MAC_CTX* mac, int encrypt);
  int encrypt(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac);
  int decrypt(const unsigned char* name, const unsigned char* iv, EVP_CIPHER_CTX* cipher,
              EVP_MAC_CTX* mac);
  // Under mutex_: moves current_ to previous_ and makes a new current_ when it is a period
  // old; drops previous_ when it is two. False when no random key could be made.
  bool rotate_locked(clock::time_point now);
  static bool make_key(key& k, clock::time_point now);
  static void wipe(key& k);

  const std::chrono::seconds period_;
  const std::function<clock::time_point()> now_;
  EVP_CIPHER* aes_ = nullptr;  // fetched once, not per ticket
  mutable std::mutex mutex_;
  key current_;
  key previous_;
  std::uint64_t generation_ = 0;
};

}  // namespace airlock::tls
