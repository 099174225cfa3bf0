#include "tls/leaf_minter.hpp"

#include "core/str_cat.hpp"

#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <algorithm>
#include <optional>

namespace airlock::tls {
namespace {

using sys_clock = std::chrono::system_clock;

using asn1_octet_string_ptr =
    std::unique_ptr<ASN1_OCTET_STRING, openssl_deleter<&ASN1_OCTET_STRING_free>>;
using authority_keyid_ptr =
    std::unique_ptr<AUTHORITY_KEYID, openssl_deleter<&AUTHORITY_KEYID_free>>;
using general_name_ptr = std::unique_ptr<GENERAL_NAME, openssl_deleter<&GENERAL_NAME_free>>;

x509_extension_ptr conf_extension(int nid, const char* value) {
  return x509_extension_ptr(X509V3_EXT_nconf_nid(nullptr, nullptr, nid, value));
}

// RFC 5280 section 4.2.1.2 method (1): SHA-1 of the subjectPublicKey BIT STRING value.
asn1_octet_string_ptr key_identifier(X509* cert_with_key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (X509_pubkey_digest(cert_with_key, EVP_sha1(), md, &len) != 1) return nullptr;
  asn1_octet_string_ptr id(ASN1_OCTET_STRING_new());
  if (!id || ASN1_OCTET_STRING_set(id.get(), md, static_cast<int>(len)) != 1) return nullptr;
  return id;
}

x509_extension_ptr subject_key_id_for(EVP_PKEY* key) {
  // X509_pubkey_digest works on a certificate, so hash the key through a scratch one.
  x509_ptr scratch(X509_new());
  if (!scratch || X509_set_pubkey(scratch.get(), key) != 1) return nullptr;
  asn1_octet_string_ptr id = key_identifier(scratch.get());
  if (!id) return nullptr;
  return x509_extension_ptr(X509V3_EXT_i2d(NID_subject_key_identifier, 0, id.get()));
}

x509_extension_ptr authority_key_id_for(X509* ca_cert) {
  // The AKI key id must equal the issuer's subjectKeyIdentifier where it has one, so that
  // chain building matches them (RFC 5280 section 4.2.1.1).
  asn1_octet_string_ptr id;
  if (const ASN1_OCTET_STRING* ski = X509_get0_subject_key_id(ca_cert)) {
    id.reset(ASN1_OCTET_STRING_dup(ski));
  } else {
    id = key_identifier(ca_cert);
  }
  authority_keyid_ptr akid(AUTHORITY_KEYID_new());
  if (!id || !akid) return nullptr;
  akid->keyid = id.release();
  return x509_extension_ptr(X509V3_EXT_i2d(NID_authority_key_identifier, 0, akid.get()));
}

// Appends one name. Built as values, not from a config string, so no character in a name can
// add a second entry (a "DNS:a,DNS:b" injection).
bool add_general_name(GENERAL_NAMES* names, const leaf_name& name) {
  general_name_ptr gen(GENERAL_NAME_new());
  if (!gen) return false;
  if (name.is_ip) {
    ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.text.c_str());
    if (ip == nullptr) return false;
    GENERAL_NAME_set0_value(gen.get(), GEN_IPADD, ip);
  } else {
    ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
    if (dns == nullptr) return false;
    if (ASN1_STRING_set(dns, name.text.data(), static_cast<int>(name.text.size())) != 1) {
      ASN1_IA5STRING_free(dns);
      return false;
    }
    GENERAL_NAME_set0_value(gen.get(), GEN_DNS, dns);
  }
  if (sk_GENERAL_NAME_push(names, gen.get()) <= 0) return false;
  gen.release();
  return true;
}

// The name first, then `also` (less any repeat of the name).
general_names_ptr subject_alt_name(const leaf_name& name, std::span<const leaf_name> also) {
  general_names_ptr names(GENERAL_NAMES_new());
  if (!names || !add_general_name(names.get(), name)) return nullptr;
  for (const auto& n : also) {
    if (n.is_ip == name.is_ip && n.text == name.text) continue;
    if (!add_general_name(names.get(), n)) return nullptr;
  }
  return names;
}

}  // namespace

std::vector<leaf_name> subject_alt_names(X509* cert, std::size_t max) {
  std::vector<leaf_name> out;
  general_names_ptr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return out;
  const int count = sk_GENERAL_NAME_num(names.get());
  for (int i = 0; i < count && out.size() < max; ++i) {
    const GENERAL_NAME* gen = sk_GENERAL_NAME_value(names.get(), i);
    std::optional<leaf_name> name;
    if (gen->type == GEN_DNS) {
      const ASN1_IA5STRING* s = gen->d.dNSName;
      name = parse_leaf_name({reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                              static_cast<std::size_t>(ASN1_STRING_length(s))});
      if (name && name->is_ip) name.reset();  // an address written as a DNS name
    } else if (gen->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = gen->d.iPAddress;
      char text[64];
      const int len = ASN1_STRING_length(ip);
      const int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
      if (family != 0 && ::inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text))
        name = parse_leaf_name(text);
    }
    if (!name) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const leaf_name& n) {
      return n.is_ip == name->is_ip && n.text == name->text;
    });
    if (!seen) out.push_back(std::move(*name));
  }
  return out;
}

leaf_certificate::leaf_certificate(x509_ptr cert, evp_pkey_ptr key, x509_ptr ca_cert, bool send_ca,
                                   leaf_name name)
    : cert_(std::move(cert)),
      key_(std::move(key)),
      ca_cert_(std::move(ca_cert)),
      send_ca_(send_ca),
      name_(std::move(name)) {
  not_before_ = to_time_point(X509_get0_notBefore(cert_.get()));
  not_after_ = to_time_point(X509_get0_notAfter(cert_.get()));
}

std::string leaf_certificate::chain_pem() const {
  return to_pem(cert_.get()) + to_pem(ca_cert_.get());
}

leaf_minter::leaf_minter(private_tag, std::shared_ptr<const certificate_authority> ca,
                         leaf_minter_options options)
    : ca_(std::move(ca)), options_(options) {}

std::shared_ptr<const leaf_minter> leaf_minter::create(
    std::shared_ptr<const certificate_authority> ca, std::string& error,
    leaf_minter_options options) {
  if (!ca) {
    error = "leaf minter: no CA";
    return nullptr;
  }
  clear_openssl_errors();
  auto m = std::make_shared<leaf_minter>(private_tag{}, std::move(ca), options);
  m->leaf_key_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  const int ca_key_type = EVP_PKEY_get_id(m->ca_->key());
  m->digest_ =
      (ca_key_type == EVP_PKEY_ED25519 || ca_key_type == EVP_PKEY_ED448) ? nullptr : EVP_sha256();
  m->basic_constraints_ = conf_extension(NID_basic_constraints, "critical,CA:FALSE");
  m->key_usage_ = conf_extension(NID_key_usage, "critical,digitalSignature");
  m->extended_key_usage_ = conf_extension(NID_ext_key_usage, "serverAuth");
  if (m->leaf_key_) {
    m->leaf_public_key_ = fast_encoding_public_key(m->leaf_key_.get());
    // Also fills the key's provider-side cache once, before threads share it.
    if (m->leaf_public_key_ && EVP_PKEY_eq(m->leaf_public_key_.get(), m->leaf_key_.get()) != 1) {
      m->leaf_public_key_.reset();
    }
  }
  if (m->leaf_public_key_) m->subject_key_id_ = subject_key_id_for(m->leaf_public_key_.get());
  m->authority_key_id_ = authority_key_id_for(m->ca_->cert());
  if (!m->leaf_key_ || !m->leaf_public_key_ || !m->basic_constraints_ || !m->key_usage_ ||
      !m->extended_key_usage_ || !m->subject_key_id_ || !m->authority_key_id_) {
    error = core::str_cat("leaf minter: ", openssl_error_string());
    return nullptr;
  }
  return m;
}

std::shared_ptr<const leaf_certificate> leaf_minter::mint(std::string_view host, std::string& error,
                                                          sys_clock::time_point now) const {
  auto name = parse_leaf_name(host);
  if (!name) {
    error = core::str_cat("not a host name or IP literal a certificate can name: '",
                          host.substr(0, 80), "'");
    return nullptr;
  }
  return mint(*name, {}, error, now);
}

std::shared_ptr<const leaf_certificate> leaf_minter::mint(const leaf_name& name,
                                                          std::span<const leaf_name> also,
                                                          std::string& error,
                                                          sys_clock::time_point now) const {
  const auto not_before = now - options_.backdate;
  // A leaf must not outlive its issuer: clients reject such a chain anyway, and a clear error
  // here is better than a handshake failure there.
  const auto not_after = std::min(now + options_.validity, ca_->not_after());
  if (not_after <= now) {
    error = core::str_cat("CA certificate ", ca_->cert_path().string(), " has expired");
    return nullptr;
  }
  clear_openssl_errors();
  x509_ptr cert(X509_new());
  general_names_ptr san = subject_alt_name(name, also);
  // RFC 5280 ub-common-name is 64; a longer name goes only in the subjectAltName, which then
  // must be critical because the subject is empty (section 4.2.1.6).
  const bool with_cn = name.text.size() <= 64;
  bool ok =
      cert && san && X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
      set_random_serial(cert.get()) && set_time(X509_getm_notBefore(cert.get()), not_before) &&
      set_time(X509_getm_notAfter(cert.get()), not_after) &&
      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_->cert())) == 1 &&
      X509_set_pubkey(cert.get(), leaf_public_key_.get()) == 1 &&
      (!with_cn ||
       X509_NAME_add_entry_by_NID(X509_get_subject_name(cert.get()), NID_commonName, MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>(name.text.c_str()), -1, -1,
                                  0) == 1) &&
      X509_add_ext(cert.get(), basic_constraints_.get(), -1) == 1 &&
      X509_add_ext(cert.get(), key_usage_.get(), -1) == 1 &&
      X509_add_ext(cert.get(), extended_key_usage_.get(), -1) == 1 &&
      X509_add_ext(cert.get(), subject_key_id_.get(), -1) == 1 &&
      X509_add_ext(cert.get(), authority_key_id_.get(), -1) == 1 &&
      X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, san.get(), with_cn ? 0 : 1,
                        X509V3_ADD_DEFAULT) == 1 &&
      X509_sign(cert.get(), ca_->key(), digest_) > 0;
  if (!ok) {
    error =
        core::str_cat("cannot mint a certificate for ", name.text, ": ", openssl_error_string());
    return nullptr;
  }
  // Read back from its DER (X509_dup encodes and decodes): a decoded certificate keeps the
  // encoding of its signed part, so each handshake that sends it copies bytes instead of
  // encoding it again field by field.
  cert.reset(X509_dup(cert.get()));
  if (!cert) {
    error = core::str_cat("cannot mint a certificate for ", name.text,
                          ": cannot read it back: ", openssl_error_string());
    return nullptr;
  }
  // Fill the lazily computed extension cache now, while this thread owns the certificate,
  // rather than on first use from several threads.
  X509_check_purpose(cert.get(), -1, 0);
  return std::make_shared<const leaf_certificate>(std::move(cert), up_ref(leaf_key_.get()),
                                                  up_ref(ca_->cert()), !ca_->self_signed(), name);
}

}  // namespace airlock::tls
