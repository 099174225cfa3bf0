#include "test_util.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace airlock::tls::test {

temp_dir::temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "airlock-tls-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::shared_ptr<const certificate_authority> make_ca(const std::filesystem::path& dir) {
  auto created = create_ca(dir, default_ca_common_name(), false);
  EXPECT_TRUE(created.ok) << created.error;
  auto loaded = certificate_authority::load(created.cert_path, created.key_path);
  EXPECT_TRUE(loaded.ca) << loaded.error;
  EXPECT_TRUE(loaded.warnings.empty());
  return loaded.ca;
}

namespace {

// The certificate of spec with a new P-256 key, signed by issuer (null: by that key itself).
void write_certificate(const cert_spec& spec, const certificate_authority* issuer,
                       const std::filesystem::path& cert_path,
                       const std::filesystem::path& key_path) {
  evp_pkey_ptr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  ASSERT_TRUE(key);
  x509_ptr cert(X509_new());
  ASSERT_TRUE(cert);
  const auto now = std::chrono::system_clock::now();
  ASSERT_EQ(X509_set_version(cert.get(), X509_VERSION_3), 1);
  ASSERT_TRUE(set_random_serial(cert.get()));
  ASSERT_TRUE(set_time(X509_getm_notBefore(cert.get()), now + spec.not_before));
  ASSERT_TRUE(set_time(X509_getm_notAfter(cert.get()), now + spec.not_after));
  X509_NAME* name = X509_get_subject_name(cert.get());
  ASSERT_EQ(X509_NAME_add_entry_by_NID(
                name, NID_commonName, MBSTRING_UTF8,
                reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1, -1, 0),
            1);
  ASSERT_EQ(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer->cert()) : name),
            1);
  ASSERT_EQ(X509_set_pubkey(cert.get(), key.get()), 1);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer ? issuer->cert() : cert.get(), cert.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    x509_extension_ptr ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value));
    ASSERT_TRUE(ext) << value;
    ASSERT_EQ(X509_add_ext(cert.get(), ext.get(), -1), 1);
  };
  if (spec.basic_constraints)
    add(NID_basic_constraints, spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  if (spec.key_usage != nullptr) add(NID_key_usage, spec.key_usage);
  add(NID_subject_key_identifier, "hash");
  // Which key signed it (RFC 5280 section 4.2.1.1): how a verifier tells a CA issued under
  // another key with the same name (a rollover) from a self-signed one.
  if (issuer) add(NID_authority_key_identifier, "keyid:always");
  ASSERT_GT(X509_sign(cert.get(), issuer ? issuer->key() : key.get(), EVP_sha256()), 0);
  write_file(cert_path, to_pem(cert.get()));
  write_file(key_path, to_pem(key.get()));
  std::filesystem::permissions(
      key_path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

}  // namespace

void write_self_signed(const cert_spec& spec, const std::filesystem::path& cert_path,
                       const std::filesystem::path& key_path) {
  write_certificate(spec, nullptr, cert_path, key_path);
}

void write_issued(const cert_spec& spec, const certificate_authority& issuer,
                  const std::filesystem::path& cert_path, const std::filesystem::path& key_path) {
  write_certificate(spec, &issuer, cert_path, key_path);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

int run_command(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe))
    output.append(buf, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace airlock::tls::test
