#include "tls/openssl_util.hpp"

#include "core/str_cat.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <cstdio>
#include <ctime>

namespace airlock::tls {
namespace {

std::string drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

x509_ptr up_ref(X509* cert) noexcept {
  if (cert == nullptr || X509_up_ref(cert) != 1) return nullptr;
  return x509_ptr(cert);
}

evp_pkey_ptr up_ref(EVP_PKEY* key) noexcept {
  if (key == nullptr || EVP_PKEY_up_ref(key) != 1) return nullptr;
  return evp_pkey_ptr(key);
}

std::string openssl_error_string() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    if (reason != nullptr) {
      out += reason;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out += buf;
    }
  }
  return out;
}

void clear_openssl_errors() noexcept {
  ERR_clear_error();
}

std::string sha256_fingerprint(const X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (cert == nullptr || X509_digest(cert, EVP_sha256(), md, &len) != 1) return {};
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(len * 3);
  for (unsigned int i = 0; i < len; ++i) {
    if (i != 0) out.push_back(':');
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 0xf]);
  }
  return out;
}

std::string name_to_string(const X509_NAME* name) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio || name == nullptr) return {};
  // RFC 2253 / RFC 4514 order (most specific first) with ", " between attributes.
  constexpr unsigned long flags = (XN_FLAG_RFC2253 & ~XN_FLAG_SEP_MASK) | XN_FLAG_SEP_CPLUS_SPC;
  if (X509_NAME_print_ex(bio.get(), name, 0, flags) < 0) return {};
  return drain(bio.get());
}

std::chrono::system_clock::time_point to_time_point(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string format_utc(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

bool set_time(ASN1_TIME* t, std::chrono::system_clock::time_point when) noexcept {
  // ASN1_TIME_set picks UTCTime for 1950..2049 and GeneralizedTime otherwise, as RFC 5280
  // section 4.1.2.5 requires.
  return t != nullptr && ASN1_TIME_set(t, std::chrono::system_clock::to_time_t(when)) != nullptr;
}

bool set_random_serial(X509* cert) noexcept {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;  // positive as a DER INTEGER without a padding octet
  bytes[0] |= 0x40;  // never zero, and always 16 octets long
  bignum_ptr bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  if (!bn) return false;
  ASN1_INTEGER* serial = X509_get_serialNumber(cert);
  return BN_to_ASN1_INTEGER(bn.get(), serial) != nullptr;
}

std::string to_pem(const X509* cert) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio || cert == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  return drain(bio.get());
}

std::string to_pem(const EVP_PKEY* key) {
  bio_ptr bio(BIO_new(BIO_s_secmem()));
  if (!bio) bio.reset(BIO_new(BIO_s_mem()));
  if (!bio || key == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return {};
  }
  return drain(bio.get());
}

x509_ptr x509_from_pem(std::string_view pem) {
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return x509_ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace airlock::tls
