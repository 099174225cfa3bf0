#include "tls/ca.hpp"

#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "tls/staged_file.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

namespace airlock::tls {
namespace {

using namespace std::chrono_literals;
using sys_clock = std::chrono::system_clock;

// Certificates and keys are small; a bound keeps a mistaken path (a log file, /dev/zero)
// from being read into memory.
constexpr std::size_t max_pem_bytes = 1 << 20;
constexpr auto expiry_warning = 30 * 24h;

// Reads a regular file of at most max_pem_bytes, never blocking on a FIFO
// (core/regular_file.hpp, the helper every file the policy names is read with).
bool read_small_file(const std::filesystem::path& path, std::string& out, struct stat& st,
                     std::string& error) {
  auto read = core::read_regular_file(path.string(), max_pem_bytes);
  st = read.st;
  switch (read.problem) {
    case core::file_problem::none:
      out = std::move(read.bytes);
      return true;
    case core::file_problem::cannot_open:
      error = core::str_cat("cannot open ", path.string(), ": ", read.error);
      break;
    case core::file_problem::directory:
    case core::file_problem::not_regular:
      error = core::str_cat(path.string(), ": not a regular file");
      break;
    case core::file_problem::too_large:
      error = core::str_cat(path.string(), ": too large for a PEM file (over ", max_pem_bytes,
                            " bytes)");
      break;
    case core::file_problem::read_failed:
      error = core::str_cat("cannot read ", path.string(), ": ", read.error);
      break;
  }
  return false;
}

// Never prompt on the terminal for a pass phrase (OpenSSL's default callback would).
int no_passphrase(char*, int, int, void*) {
  return -1;
}

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string hostname_for_cn(std::size_t max_len) {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string name(buf);
  if (auto dot = name.find('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  if (name.size() > max_len) name.resize(max_len);
  return name;
}

bool add_extension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  x509_extension_ptr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

}  // namespace

certificate_authority::certificate_authority(x509_ptr cert, evp_pkey_ptr key,
                                             std::filesystem::path cert_path)
    : cert_(std::move(cert)), key_(std::move(key)), cert_path_(std::move(cert_path)) {
  subject_ = name_to_string(X509_get_subject_name(cert_.get()));
  fingerprint_ = sha256_fingerprint(cert_.get());
  not_before_ = to_time_point(X509_get0_notBefore(cert_.get()));
  not_after_ = to_time_point(X509_get0_notAfter(cert_.get()));
  // The signature checked too: a self-issued certificate of a key rollover names itself as
  // issuer but is signed by another key, and the client needs it sent.
  self_signed_ = X509_self_signed(cert_.get(), 1) == 1;
  clear_openssl_errors();
}

ca_load_result certificate_authority::load(const std::filesystem::path& cert_path,
                                           const std::filesystem::path& key_path) {
  ca_load_result r;
  const std::string cert_name = cert_path.string();
  const std::string key_name = key_path.string();
  struct stat st {};
  std::string pem;
  if (!read_small_file(cert_path, pem, st, r.error)) {
    r.error = core::str_cat("CA certificate: ", r.error);
    return r;
  }
  clear_openssl_errors();
  x509_ptr cert = x509_from_pem(pem);
  if (!cert) {
    r.error = core::str_cat("CA certificate ", cert_name, ": no PEM certificate found (",
                            openssl_error_string(), ")");
    return r;
  }

  const std::uint32_t flags = X509_get_extension_flags(cert.get());
  if ((flags & EXFLAG_INVALID) != 0) {
    r.error = core::str_cat("CA certificate ", cert_name, ": malformed X.509 v3 extensions");
    return r;
  }
  if ((flags & EXFLAG_CA) == 0) {
    r.error = core::str_cat("CA certificate ", cert_name,
                            ": not a CA certificate (basicConstraints CA:TRUE is missing)");
    return r;
  }
  if ((flags & EXFLAG_KUSAGE) == 0 || (X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN) == 0) {
    r.error = core::str_cat("CA certificate ", cert_name,
                            ": keyUsage does not allow keyCertSign (RFC 5280 section 4.2.1.3)");
    return r;
  }
  const auto now = sys_clock::now();
  const auto not_before = to_time_point(X509_get0_notBefore(cert.get()));
  const auto not_after = to_time_point(X509_get0_notAfter(cert.get()));
  if (not_after <= now) {
    r.error = core::str_cat("CA certificate ", cert_name, ": expired on ", format_utc(not_after),
                            "; create a new CA with `airlock ca init --force`");
    return r;
  }
  if (not_before > now) {
    r.error = core::str_cat("CA certificate ", cert_name, ": not valid before ",
                            format_utc(not_before), " (is the clock right?)");
    return r;
  }
  if (not_after - now < expiry_warning) {
    r.warnings.push_back(core::str_cat("CA certificate ", cert_name, " expires on ",
                                       format_utc(not_after), "; rotate it soon"));
  }

  std::string key_pem;
  if (!read_small_file(key_path, key_pem, st, r.error)) {
    r.error = core::str_cat("CA key: ", r.error);
    return r;
  }
  if ((st.st_mode & 077) != 0) {
    r.warnings.push_back(core::str_cat("CA key ", key_name,
                                       " is accessible by group or others (mode ",
                                       mode_text(st.st_mode), "); run chmod 600 ", key_name));
  }
  evp_pkey_ptr key;
  {
    bio_ptr bio(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
    if (bio) key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, &no_passphrase, nullptr));
  }
  const bool encrypted = key_pem.find("ENCRYPTED") != std::string::npos;
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
  if (!key) {
    std::string why = openssl_error_string();
    r.error = encrypted
                  ? core::str_cat("CA key ", key_name,
                                  ": encrypted keys are not supported (no pass phrase "
                                  "prompt); store it unencrypted with mode 0600")
                  : core::str_cat("CA key ", key_name, ": no PEM private key found (", why, ")");
    return r;
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    clear_openssl_errors();
    r.error = core::str_cat("CA key ", key_name, " does not match the certificate ", cert_name);
    return r;
  }
  r.ca = std::make_shared<const certificate_authority>(std::move(cert), std::move(key), cert_path);
  return r;
}

std::string default_ca_common_name() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  // "Airlock CA () YYYY-MM-DD" is 24 characters; the CN may hold 64.
  return core::str_cat("Airlock CA (", hostname_for_cn(40), ") ", date);
}

ca_create_result create_ca(const std::filesystem::path& dir, const std::string& common_name,
                           bool force) {
  ca_create_result r;
  r.cert_path = dir / ca_cert_file;
  r.key_path = dir / ca_key_file;
  if (common_name.empty() || common_name.size() > 64) {
    r.error = "CA common name must be 1 to 64 characters (RFC 5280 ub-common-name)";
    return r;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    r.error = core::str_cat("cannot create directory ", dir.string(), ": ", ec.message());
    return r;
  }
  if (!force) {
    // symlink_status: a dangling symlink named ca.key counts as existing too.
    for (const auto& p : {r.cert_path, r.key_path}) {
      if (std::filesystem::exists(std::filesystem::symlink_status(p, ec))) {
        r.error = core::str_cat(p.string(), " already exists; not replacing the CA in ",
                                dir.string(), " (use --force to replace it)");
        return r;
      }
    }
  }

  clear_openssl_errors();
  evp_pkey_ptr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  x509_ptr cert(X509_new());
  x509_name_ptr name(X509_NAME_new());
  const auto now = sys_clock::now();
  X509V3_CTX ctx;
  // Attributes go most general first, so RFC 4514 text reads "CN=..., O=Airlock".
  bool ok = key && cert && name && X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
            set_random_serial(cert.get()) && set_time(X509_getm_notBefore(cert.get()), now - 1h) &&
            set_time(X509_getm_notAfter(cert.get()), now + 3653 * 24h) &&
            X509_NAME_add_entry_by_NID(name.get(), NID_organizationName, MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>("Airlock"), -1, -1,
                                       0) == 1 &&
            X509_NAME_add_entry_by_NID(name.get(), NID_commonName, MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                       -1, -1, 0) == 1 &&
            X509_set_subject_name(cert.get(), name.get()) == 1 &&
            X509_set_issuer_name(cert.get(), name.get()) == 1 &&
            X509_set_pubkey(cert.get(), key.get()) == 1;
  if (ok) {
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    // pathlen:0: this CA signs leaves only, never another CA (RFC 5280 section 4.2.1.9).
    ok = add_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
         add_extension(cert.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash") &&
         X509_sign(cert.get(), key.get(), EVP_sha256()) > 0;
  }
  if (!ok) {
    r.error = core::str_cat("cannot build the CA certificate: ", openssl_error_string());
    return r;
  }

  std::string key_pem = to_pem(key.get());
  std::string cert_pem = to_pem(cert.get());
  if (key_pem.empty() || cert_pem.empty()) {
    r.error = core::str_cat("cannot encode the CA as PEM: ", openssl_error_string());
    return r;
  }
  // Both files are staged before either replaces anything, so a failure leaves the old pair
  // (or nothing) in place, never a new key next to an old certificate.
  staged_file key_file;
  staged_file cert_file;
  ok = key_file.stage(r.key_path, key_pem, 0600, r.error) &&
       cert_file.stage(r.cert_path, cert_pem, 0644, r.error);
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
  if (!ok) return r;
  if (!key_file.commit(force, r.error)) return r;
  if (!cert_file.commit(force, r.error)) {
    // Only reachable without force when ca.crt appeared after the check above: remove the key
    // this call just put in place rather than leave an unpaired key behind.
    if (!force) ::unlink(r.key_path.c_str());
    return r;
  }
  r.fingerprint = sha256_fingerprint(cert.get());
  r.ok = true;
  return r;
}

bool read_certificate_info(const std::filesystem::path& cert_path, certificate_info& out,
                           std::string& error) {
  struct stat st {};
  std::string pem;
  if (!read_small_file(cert_path, pem, st, error)) return false;
  clear_openssl_errors();
  x509_ptr cert = x509_from_pem(pem);
  if (!cert) {
    error = core::str_cat(cert_path.string(), ": no PEM certificate found (",
                          openssl_error_string(), ")");
    return false;
  }
  out.subject = name_to_string(X509_get_subject_name(cert.get()));
  out.issuer = name_to_string(X509_get_issuer_name(cert.get()));
  out.not_before = to_time_point(X509_get0_notBefore(cert.get()));
  out.not_after = to_time_point(X509_get0_notAfter(cert.get()));
  out.fingerprint = sha256_fingerprint(cert.get());
  out.is_ca = (X509_get_extension_flags(cert.get()) & EXFLAG_CA) != 0;
  out.serial.clear();
  if (bignum_ptr bn{ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr)}) {
    if (char* hex = BN_bn2hex(bn.get())) {
      out.serial = hex;
      OPENSSL_free(hex);
    }
  }
  return true;
}

}  // namespace airlock::tls
