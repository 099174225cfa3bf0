#pragma once
// Mints the leaf certificates the proxy presents to a client after `CONNECT host:port` when
// the policy says to inspect that host. One ECDSA P-256 key, generated when the minter is
// created, is shared by every leaf, so minting is building, signing and reading back one
// certificate (about 0.2 ms, two thirds of it the read-back's key decode, which spares each
// later handshake the certificate's encoding) rather than a key generation per host. The key
// never leaves memory.
//
// Thread safety: leaf_minter::mint is const and may be called from any thread at once. A
// leaf_certificate is immutable once built; share it across threads by shared_ptr.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "tls/ca.hpp"
#include "tls/leaf_name.hpp"
#include "tls/openssl_util.hpp"

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::tls {

// A minted leaf and what a server needs to present it: the certificate, the shared leaf key
// and the issuing CA certificate.
class leaf_certificate {
 public:
  // send_ca: whether the CA certificate goes after the leaf in the handshake (chain_cert).
  leaf_certificate(x509_ptr cert, evp_pkey_ptr key, x509_ptr ca_cert, bool send_ca, leaf_name name);

  // Owned by this object (counted references); valid for its lifetime. Do not modify.
  X509* cert() const noexcept { return cert_.get(); }
  EVP_PKEY* key() const noexcept { return key_.get(); }
  X509* ca_cert() const noexcept { return ca_cert_.get(); }
  // What the handshake sends after the leaf: the CA certificate when it is an intermediate,
  // which the client cannot know; null when it is a self-signed root, which a client that
  // accepts the leaf holds already as its trust anchor (RFC 8446 section 4.4.2 lets the sender
  // omit it). Sending a root anyway costs every client handshake a certificate to parse and
  // the wire about 500 bytes.
  X509* chain_cert() const noexcept { return send_ca_ ? ca_cert_.get() : nullptr; }

  const leaf_name& name() const noexcept { return name_; }
  std::chrono::system_clock::time_point not_before() const noexcept { return not_before_; }
  std::chrono::system_clock::time_point not_after() const noexcept { return not_after_; }
  // The leaf then the CA certificate, PEM.
  std::string chain_pem() const;

 private:
  x509_ptr cert_;
  evp_pkey_ptr key_;
  x509_ptr ca_cert_;
  bool send_ca_;
  leaf_name name_;
  std::chrono::system_clock::time_point not_before_;
  std::chrono::system_clock::time_point not_after_;
};

struct leaf_minter_options {
  // Short-lived leaves: a leaked one is of little use, and renewal is cheap.
  std::chrono::seconds validity = std::chrono::hours(7 * 24);
  // Tolerates clients whose clock is behind ours.
  std::chrono::seconds backdate = std::chrono::hours(1);
};

// The DNS names and IP addresses of a certificate's subjectAltName that a leaf can name (see
// parse_leaf_name: wildcards and malformed entries are left out), at most `max` of them, in
// canonical form and without repeats.
std::vector<leaf_name> subject_alt_names(X509* cert, std::size_t max = 64);

class leaf_minter {
  struct private_tag {};

 public:
  // Generates the shared leaf key and precomputes the extensions every leaf carries. Returns
  // null and sets error if OpenSSL fails.
  static std::shared_ptr<const leaf_minter> create(std::shared_ptr<const certificate_authority> ca,
                                                   std::string& error,
                                                   leaf_minter_options options = {});

  // Mints a leaf for a DNS name or IP literal (see parse_leaf_name):
  //   serial: random 16 octets; validity: now - backdate .. now + validity, cut at the CA's
  //   notAfter; subject: CN=<name> when it fits in 64 characters (else an empty subject and a
  //   critical subjectAltName, RFC 5280 section 4.2.1.6); subjectAltName: DNS:<name> or
  //   IP:<addr>; basicConstraints critical CA:FALSE; keyUsage critical digitalSignature (no
  //   keyEncipherment: an EC key does not encipher); extendedKeyUsage serverAuth;
  //   subjectKeyIdentifier; authorityKeyIdentifier (the CA's key id).
  // Returns null and sets error for a name parse_leaf_name rejects, or if signing fails.
  std::shared_ptr<const leaf_certificate> mint(
      std::string_view host, std::string& error,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;
  // The same for a name that is already canonical: it must come from parse_leaf_name, as must
  // each of `also`, further subjectAltName entries after the name (for an IP-literal CONNECT:
  // the names the verified origin certificate carries, as mitmproxy does).
  std::shared_ptr<const leaf_certificate> mint(const leaf_name& name,
                                               std::span<const leaf_name> also, std::string& error,
                                               std::chrono::system_clock::time_point now) const;

  const certificate_authority& ca() const noexcept { return *ca_; }

  leaf_minter(private_tag, std::shared_ptr<const certificate_authority> ca,
              leaf_minter_options options);

 private:
  std::shared_ptr<const certificate_authority> ca_;
  leaf_minter_options options_;
  evp_pkey_ptr leaf_key_;           // the private key, presented by every TLS server side
  evp_pkey_ptr leaf_public_key_;    // its public half, in the form that encodes quickly
  const EVP_MD* digest_ = nullptr;  // null for EdDSA CA keys, which hash internally
  // Identical in every leaf; X509_add_ext copies them.
  x509_extension_ptr basic_constraints_;
  x509_extension_ptr key_usage_;
  x509_extension_ptr extended_key_usage_;
  x509_extension_ptr subject_key_id_;
  x509_extension_ptr authority_key_id_;
};

}  // namespace airlock::tls
