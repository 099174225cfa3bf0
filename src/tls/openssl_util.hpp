#pragma once
// RAII owners for the OpenSSL objects this component handles, and helpers that turn OpenSSL
// state (error queue, names, times, digests) into plain strings.
//
// Thread safety: the free functions are safe to call from any thread (the error queue they
// read is per thread). The owners behave like std::unique_ptr.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::tls {

template <auto Free>
struct openssl_deleter {
  template <typename T>
  void operator()(T* p) const noexcept {
    Free(p);
  }
};

using x509_ptr = std::unique_ptr<X509, openssl_deleter<&X509_free>>;
using evp_pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_deleter<&EVP_PKEY_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_deleter<&BIO_free_all>>;
using bignum_ptr = std::unique_ptr<BIGNUM, openssl_deleter<&BN_free>>;
using x509_extension_ptr = std::unique_ptr<X509_EXTENSION, openssl_deleter<&X509_EXTENSION_free>>;
using x509_name_ptr = std::unique_ptr<X509_NAME, openssl_deleter<&X509_NAME_free>>;
using general_names_ptr = std::unique_ptr<GENERAL_NAMES, openssl_deleter<&GENERAL_NAMES_free>>;
using x509_store_ptr = std::unique_ptr<X509_STORE, openssl_deleter<&X509_STORE_free>>;
using x509_store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, openssl_deleter<&X509_STORE_CTX_free>>;

// Takes a new reference on an object owned elsewhere.
x509_ptr up_ref(X509* cert) noexcept;
evp_pkey_ptr up_ref(EVP_PKEY* key) noexcept;

// A public-only copy of key that X509_set_pubkey encodes in microseconds rather than about a
// millisecond (OpenSSL 3.0; see legacy_ec_key.cpp). Falls back to a new reference on key
// itself for other key types or when the legacy API is compiled out.
evp_pkey_ptr fast_encoding_public_key(EVP_PKEY* key);

// Drains this thread's OpenSSL error queue into "reason; reason" ("" when empty). Call it
// right after the failing call so that the queue holds only that failure.
std::string openssl_error_string();
// Empties this thread's error queue (before a call whose failure is reported by value).
void clear_openssl_errors() noexcept;

// SHA-256 of the DER certificate as upper-case colon hex ("AB:CD:..."), as `openssl x509
// -fingerprint -sha256` prints it.
std::string sha256_fingerprint(const X509* cert);
// RFC 2253 form, most specific first: "CN=Airlock CA (host) 2025-01-01,O=Airlock".
std::string name_to_string(const X509_NAME* name);
std::chrono::system_clock::time_point to_time_point(const ASN1_TIME* t);
// "2025-01-31T12:00:00Z"
std::string format_utc(std::chrono::system_clock::time_point t);
// Sets t (UTCTime before 2050, else GeneralizedTime, RFC 5280 section 4.1.2.5).
bool set_time(ASN1_TIME* t, std::chrono::system_clock::time_point when) noexcept;
// A random positive 16-octet serial carrying 126 random bits (RFC 5280 section 4.1.2.2 allows
// up to 20 octets; the CA/B Forum asks for at least 64 bits of entropy).
bool set_random_serial(X509* cert) noexcept;

std::string to_pem(const X509* cert);
// PKCS#8, unencrypted. The caller owns the secret; wipe it with OPENSSL_cleanse when done.
std::string to_pem(const EVP_PKEY* key);
x509_ptr x509_from_pem(std::string_view pem);

}  // namespace airlock::tls
