#pragma once
// A private key made now, as PKCS#8 PEM: tests that need key-shaped text generate it at run
// time rather than keep a key (or a key-shaped literal) in the repository.

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string>

namespace airlock::test {

inline std::string fresh_private_key_pem() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  BIO* bio = BIO_new(BIO_s_mem());
  std::string pem;
  if (key && bio && PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr)) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    pem.assign(data, static_cast<std::size_t>(n));
  }
  BIO_free(bio);
  EVP_PKEY_free(key);
  return pem;
}

}  // namespace airlock::test
