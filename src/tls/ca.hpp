#pragma once
// The local certificate authority that signs interception leaves: loading (with the checks
// that catch a wrong or unsafe file before the proxy serves a single connection), creation for
// `airlock ca init`, and a read-only description for `airlock ca show`.
//
// Loading and creation run at startup or from the CLI (the config path): they report errors as
// values with the file named, never by exception, and never prompt for a pass phrase.
//
// Thread safety: a loaded certificate_authority is immutable; share it freely across threads
// (OpenSSL 3 allows concurrent signing with one EVP_PKEY). The free functions are thread safe.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "tls/openssl_util.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace airlock::tls {

struct ca_load_result;

class certificate_authority {
 public:
  // Loads a PEM certificate and an unencrypted PEM private key and checks that: the key
  // matches the certificate; the certificate is a CA (basicConstraints CA:TRUE) whose
  // keyUsage includes keyCertSign (RFC 5280 section 4.2.1.3 requires keyUsage on CA
  // certificates); it is valid now. A key file that group or others may access, and a
  // certificate that expires within 30 days, are reported as warnings.
  static ca_load_result load(const std::filesystem::path& cert_path,
                             const std::filesystem::path& key_path);

  // Owned by this object; valid for its lifetime. Do not modify.
  X509* cert() const noexcept { return cert_.get(); }
  EVP_PKEY* key() const noexcept { return key_.get(); }

  const std::filesystem::path& cert_path() const noexcept { return cert_path_; }
  const std::string& subject() const noexcept { return subject_; }
  const std::string& fingerprint() const noexcept { return fingerprint_; }  // SHA-256
  std::chrono::system_clock::time_point not_before() const noexcept { return not_before_; }
  std::chrono::system_clock::time_point not_after() const noexcept { return not_after_; }
  // A root (signed by its own key) rather than an intermediate under another CA: a client that
  // accepts our leaves holds it already as a trust anchor.
  bool self_signed() const noexcept { return self_signed_; }

  // Takes ownership; load() is the checked way to get one.
  certificate_authority(x509_ptr cert, evp_pkey_ptr key, std::filesystem::path cert_path);

 private:
  x509_ptr cert_;
  evp_pkey_ptr key_;
  std::filesystem::path cert_path_;
  std::string subject_;
  std::string fingerprint_;
  std::chrono::system_clock::time_point not_before_;
  std::chrono::system_clock::time_point not_after_;
  bool self_signed_ = false;
};

struct ca_load_result {
  std::shared_ptr<const certificate_authority> ca;  // null when error is set
  std::string error;                                // names the file at fault
  std::vector<std::string> warnings;                // set even on success
};

// File names inside a CA directory.
inline constexpr std::string_view ca_cert_file = "ca.crt";
inline constexpr std::string_view ca_key_file = "ca.key";

// "Airlock CA (<hostname>) <YYYY-MM-DD>", the date in UTC.
std::string default_ca_common_name();

struct ca_create_result {
  bool ok = false;
  std::string error;
  std::filesystem::path cert_path;
  std::filesystem::path key_path;
  std::string fingerprint;  // SHA-256, colon hex
};

// Creates dir (if needed) and in it a new CA: ECDSA P-256 key, self-signed X.509 v3
// certificate, 128-bit random serial, valid from one hour ago (clock skew) for ten years,
// subject "CN=<common_name>, O=Airlock" (CN: 1..64 characters, RFC 5280 ub-common-name),
// basicConstraints critical CA:TRUE pathlen:0, keyUsage critical keyCertSign cRLSign,
// subjectKeyIdentifier. ca.key is written 0600 and ca.crt 0644, each atomically (see
// staged_file). An existing ca.crt or ca.key is left alone unless force.
ca_create_result create_ca(const std::filesystem::path& dir, const std::string& common_name,
                           bool force);

// What `airlock ca show` prints; needs only the certificate (not the key).
struct certificate_info {
  std::string subject;
  std::string issuer;
  std::string serial;  // hex
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;
  std::string fingerprint;  // SHA-256, colon hex
  bool is_ca = false;
};

// Reads the first certificate of a PEM file. On failure returns false and sets error.
bool read_certificate_info(const std::filesystem::path& cert_path, certificate_info& out,
                           std::string& error);

}  // namespace airlock::tls
