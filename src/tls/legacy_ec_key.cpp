// The one place that uses OpenSSL's deprecated EC_KEY API, and why: in OpenSSL 3.0,
// X509_set_pubkey() on a provider-native key builds an OSSL_ENCODER_CTX on every call (it
// walks every registered encoder), which costs about 1 ms, ten times the signature itself.
// For a legacy (EC_KEY-backed) key it calls the key's own SubjectPublicKeyInfo encoder, which
// takes microseconds. Measured on OpenSSL 3.0.x: 950 us vs 5 us per X509_set_pubkey.
#define OPENSSL_SUPPRESS_DEPRECATED

#include <openssl/ec.h>
#include <openssl/evp.h>

#include "tls/openssl_util.hpp"

namespace airlock::tls {

evp_pkey_ptr fast_encoding_public_key(EVP_PKEY* key) {
#ifndef OPENSSL_NO_DEPRECATED_3_0
  if (key != nullptr && EVP_PKEY_get_id(key) == EVP_PKEY_EC) {
    // Only the public half is copied: this object ends up cached in every leaf certificate.
    EC_KEY* full = EVP_PKEY_get1_EC_KEY(key);
    EC_KEY* pub = EC_KEY_new();
    evp_pkey_ptr out(EVP_PKEY_new());
    const bool ok = full != nullptr && pub != nullptr && out &&
                    EC_KEY_set_group(pub, EC_KEY_get0_group(full)) == 1 &&
                    EC_KEY_set_public_key(pub, EC_KEY_get0_public_key(full)) == 1 &&
                    EVP_PKEY_assign_EC_KEY(out.get(), pub) == 1;  // takes pub on success
    EC_KEY_free(full);
    if (ok) return out;
    EC_KEY_free(pub);
  }
#endif
  // Correct, only slower.
  return up_ref(key);
}

}  // namespace airlock::tls
