#include "tls/ca.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.hpp"

namespace airlock::tls {
namespace {

using namespace std::chrono_literals;

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(TlsCertificateAuthority, CreateWritesKey0600AndCert0644) {
  test::temp_dir dir;
  const mode_t old = ::umask(077);  // must not make ca.crt unreadable
  auto r = create_ca(dir / "certs", "Test CA", false);
  ::umask(old);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cert_path, dir / "certs" / "ca.crt");
  EXPECT_EQ(r.key_path, dir / "certs" / "ca.key");
  EXPECT_EQ(mode_of(r.key_path), 0600u);
  EXPECT_EQ(mode_of(r.cert_path), 0644u);
  EXPECT_EQ(r.fingerprint.size(), 32u * 3 - 1);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / "certs")) {
    ++files;
  }
  EXPECT_EQ(files, 2u);  // no temporary files left
}

TEST(TlsCertificateAuthority, CreatedCertificateHasTheRequiredProfile) {
  test::temp_dir dir;
  const auto before = std::chrono::system_clock::now();
  auto ca = test::make_ca(dir.path());
  ASSERT_TRUE(ca);
  X509* cert = ca->cert();
  EXPECT_EQ(X509_get_version(cert), X509_VERSION_3);
  // Subject "CN=Airlock CA (<host>) <date>, O=Airlock", self-issued.
  EXPECT_TRUE(ca->subject().starts_with("CN=Airlock CA (")) << ca->subject();
  EXPECT_TRUE(ca->subject().ends_with(", O=Airlock")) << ca->subject();
  EXPECT_EQ(X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)), 0);
  // ECDSA P-256.
  EXPECT_EQ(EVP_PKEY_get_id(ca->key()), EVP_PKEY_EC);
  char group[64] = {};
  EXPECT_EQ(EVP_PKEY_get_group_name(ca->key(), group, sizeof group, nullptr), 1);
  EXPECT_STREQ(group, "prime256v1");
  // Serial: 16 random octets, positive.
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
  EXPECT_EQ(ASN1_STRING_length(serial), 16);
  EXPECT_EQ(ASN1_STRING_type(serial), V_ASN1_INTEGER);
  // Validity now-1h .. now+10y.
  EXPECT_NEAR(std::chrono::duration<double>(ca->not_before() - (before - 1h)).count(), 0, 5);
  EXPECT_GE(ca->not_after() - before, 3652 * 24h);
  EXPECT_LE(ca->not_after() - before, 3654 * 24h);
  // basicConstraints critical CA:TRUE pathlen:0.
  int crit = -1;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(cert, NID_basic_constraints, &crit, nullptr));
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(crit, 1);
  EXPECT_TRUE(bc->ca);
  ASSERT_NE(bc->pathlen, nullptr);
  EXPECT_EQ(ASN1_INTEGER_get(bc->pathlen), 0);
  BASIC_CONSTRAINTS_free(bc);
  // keyUsage critical keyCertSign, cRLSign and nothing else.
  auto* ku = static_cast<ASN1_BIT_STRING*>(X509_get_ext_d2i(cert, NID_key_usage, &crit, nullptr));
  ASSERT_NE(ku, nullptr);
  EXPECT_EQ(crit, 1);
  ASN1_BIT_STRING_free(ku);
  EXPECT_EQ(X509_get_key_usage(cert), static_cast<std::uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EXPECT_NE(X509_get0_subject_key_id(cert), nullptr);
  // Self-signature verifies.
  EXPECT_EQ(X509_verify(cert, ca->key()), 1);
  EXPECT_EQ(X509_check_ca(cert), 1);
}

TEST(TlsCertificateAuthority, RefusesToOverwriteUnlessForced) {
  test::temp_dir dir;
  auto first = create_ca(dir.path(), "First", false);
  ASSERT_TRUE(first.ok) << first.error;
  const std::string key_before = test::read_file(first.key_path);
  auto second = create_ca(dir.path(), "Second", false);
  EXPECT_FALSE(second.ok);
  EXPECT_TRUE(contains(second.error, "already exists")) << second.error;
  EXPECT_TRUE(contains(second.error, "--force")) << second.error;
  EXPECT_EQ(test::read_file(first.key_path), key_before);
  auto forced = create_ca(dir.path(), "Third", true);
  ASSERT_TRUE(forced.ok) << forced.error;
  EXPECT_NE(forced.fingerprint, first.fingerprint);
  EXPECT_NE(test::read_file(first.key_path), key_before);
  EXPECT_EQ(mode_of(forced.key_path), 0600u);
  auto loaded = certificate_authority::load(forced.cert_path, forced.key_path);
  ASSERT_TRUE(loaded.ca) << loaded.error;
  EXPECT_EQ(loaded.ca->subject(), "CN=Third, O=Airlock");
}

TEST(TlsCertificateAuthority, RefusesWhenOnlyTheKeyExists) {
  test::temp_dir dir;
  test::write_file(dir / "ca.key", "precious");
  auto r = create_ca(dir.path(), "Test", false);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, "ca.key")) << r.error;
  EXPECT_EQ(test::read_file(dir / "ca.key"), "precious");
  EXPECT_FALSE(std::filesystem::exists(dir / "ca.crt"));
}

TEST(TlsCertificateAuthority, DirectoryThatIsAFileIsAnError) {
  test::temp_dir dir;
  test::write_file(dir / "file", "x");
  auto r = create_ca(dir / "file", "Test", false);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, (dir / "file").string())) << r.error;
}

TEST(TlsCertificateAuthority, RejectsBadCommonName) {
  test::temp_dir dir;
  EXPECT_FALSE(create_ca(dir.path(), "", false).ok);
  EXPECT_FALSE(create_ca(dir.path(), std::string(65, 'x'), false).ok);
  EXPECT_TRUE(create_ca(dir.path(), std::string(64, 'x'), false).ok);
}

TEST(TlsCertificateAuthority, DefaultCommonNameFitsAndNamesTheHost) {
  const std::string cn = default_ca_common_name();
  EXPECT_TRUE(cn.starts_with("Airlock CA (")) << cn;
  EXPECT_LE(cn.size(), 64u);
  // Ends in a YYYY-MM-DD date.
  ASSERT_GE(cn.size(), 10u);
  const std::string date = cn.substr(cn.size() - 10);
  EXPECT_EQ(date[4], '-');
  EXPECT_EQ(date[7], '-');
}

TEST(TlsCertificateAuthority, LoadRoundTrip) {
  test::temp_dir dir;
  auto created = create_ca(dir.path(), "Round Trip", false);
  ASSERT_TRUE(created.ok) << created.error;
  auto loaded = certificate_authority::load(created.cert_path, created.key_path);
  ASSERT_TRUE(loaded.ca) << loaded.error;
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_EQ(loaded.ca->fingerprint(), created.fingerprint);
  EXPECT_EQ(loaded.ca->subject(), "CN=Round Trip, O=Airlock");
  EXPECT_EQ(loaded.ca->cert_path(), created.cert_path);
  EXPECT_EQ(X509_check_private_key(loaded.ca->cert(), loaded.ca->key()), 1);

  certificate_info info;
  std::string error;
  ASSERT_TRUE(read_certificate_info(created.cert_path, info, error)) << error;
  EXPECT_EQ(info.subject, "CN=Round Trip, O=Airlock");
  EXPECT_EQ(info.issuer, info.subject);
  EXPECT_EQ(info.fingerprint, created.fingerprint);
  EXPECT_TRUE(info.is_ca);
  EXPECT_EQ(info.serial.size(), 32u);
}

TEST(TlsCertificateAuthority, MismatchedKeyIsAnErrorNamingTheFiles) {
  test::temp_dir a;
  test::temp_dir b;
  auto ca_a = create_ca(a.path(), "A", false);
  auto ca_b = create_ca(b.path(), "B", false);
  ASSERT_TRUE(ca_a.ok && ca_b.ok);
  auto loaded = certificate_authority::load(ca_a.cert_path, ca_b.key_path);
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "does not match")) << loaded.error;
  EXPECT_TRUE(contains(loaded.error, ca_b.key_path.string())) << loaded.error;
  EXPECT_TRUE(contains(loaded.error, ca_a.cert_path.string())) << loaded.error;
}

TEST(TlsCertificateAuthority, NonCaCertificateIsRejected) {
  test::temp_dir dir;
  test::cert_spec spec;
  spec.ca = false;
  spec.key_usage = "critical,digitalSignature";
  test::write_self_signed(spec, dir / "leaf.crt", dir / "leaf.key");
  auto loaded = certificate_authority::load(dir / "leaf.crt", dir / "leaf.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "not a CA")) << loaded.error;
  EXPECT_TRUE(contains(loaded.error, (dir / "leaf.crt").string())) << loaded.error;

  // No basicConstraints at all (an X.509 v1-style certificate) is no CA either.
  spec.basic_constraints = false;
  spec.key_usage = "critical,keyCertSign";
  test::write_self_signed(spec, dir / "v1.crt", dir / "v1.key");
  loaded = certificate_authority::load(dir / "v1.crt", dir / "v1.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "not a CA")) << loaded.error;
}

TEST(TlsCertificateAuthority, CaWithoutKeyCertSignIsRejected) {
  test::temp_dir dir;
  test::cert_spec spec;
  spec.key_usage = "critical,digitalSignature,cRLSign";
  test::write_self_signed(spec, dir / "ca.crt", dir / "ca.key");
  auto loaded = certificate_authority::load(dir / "ca.crt", dir / "ca.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "keyCertSign")) << loaded.error;

  spec.key_usage = nullptr;  // RFC 5280 4.2.1.3: a CA certificate must carry keyUsage
  test::write_self_signed(spec, dir / "ca2.crt", dir / "ca2.key");
  loaded = certificate_authority::load(dir / "ca2.crt", dir / "ca2.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "keyCertSign")) << loaded.error;
}

TEST(TlsCertificateAuthority, ExpiredAndNotYetValidAreRejected) {
  test::temp_dir dir;
  test::cert_spec spec;
  spec.not_before = -48h;
  spec.not_after = -1h;
  test::write_self_signed(spec, dir / "old.crt", dir / "old.key");
  auto loaded = certificate_authority::load(dir / "old.crt", dir / "old.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "expired")) << loaded.error;

  spec.not_before = 24h;
  spec.not_after = 48h;
  test::write_self_signed(spec, dir / "future.crt", dir / "future.key");
  loaded = certificate_authority::load(dir / "future.crt", dir / "future.key");
  EXPECT_FALSE(loaded.ca);
  EXPECT_TRUE(contains(loaded.error, "not valid before")) << loaded.error;
}

TEST(TlsCertificateAuthority, WarnsWhenExpiringSoon) {
  test::temp_dir dir;
  test::cert_spec spec;
  spec.not_after = 24h * 10;
  test::write_self_signed(spec, dir / "ca.crt", dir / "ca.key");
  auto loaded = certificate_authority::load(dir / "ca.crt", dir / "ca.key");
  ASSERT_TRUE(loaded.ca) << loaded.error;
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_TRUE(contains(loaded.warnings[0], "expires")) << loaded.warnings[0];
}

TEST(TlsCertificateAuthority, WarnsWhenKeyIsReadableByOthers) {
  test::temp_dir dir;
  auto created = create_ca(dir.path(), "Test", false);
  ASSERT_TRUE(created.ok) << created.error;
  ASSERT_EQ(::chmod(created.key_path.c_str(), 0640), 0);
  auto loaded = certificate_authority::load(created.cert_path, created.key_path);
  ASSERT_TRUE(loaded.ca) << loaded.error;  // a warning, not an error
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_TRUE(contains(loaded.warnings[0], "0640")) << loaded.warnings[0];
  EXPECT_TRUE(contains(loaded.warnings[0], "chmod 600")) << loaded.warnings[0];
  EXPECT_TRUE(contains(loaded.warnings[0], created.key_path.string())) << loaded.warnings[0];
}

TEST(TlsCertificateAuthority, UnreadableOrMalformedFilesAreNamed) {
  test::temp_dir dir;
  auto created = create_ca(dir.path(), "Test", false);
  ASSERT_TRUE(created.ok) << created.error;

  auto missing = certificate_authority::load(dir / "nope.crt", created.key_path);
  EXPECT_FALSE(missing.ca);
  EXPECT_TRUE(contains(missing.error, "nope.crt")) << missing.error;
  EXPECT_TRUE(contains(missing.error, "No such file")) << missing.error;

  test::write_file(dir / "garbage.crt", "not a certificate\n");
  auto garbage = certificate_authority::load(dir / "garbage.crt", created.key_path);
  EXPECT_FALSE(garbage.ca);
  EXPECT_TRUE(contains(garbage.error, "garbage.crt")) << garbage.error;

  // The key and the certificate swapped.
  auto swapped = certificate_authority::load(created.key_path, created.cert_path);
  EXPECT_FALSE(swapped.ca);
  EXPECT_TRUE(contains(swapped.error, "ca.key")) << swapped.error;

  test::write_file(
      dir / "garbage.key",
      // Split so that no tracked file looks like it holds a key: this one is garbage on purpose.
      "-----BEGIN "
      "PRIVATE KEY-----\nAAAA\n-----END "
      "PRIVATE KEY-----\n");
  auto bad_key = certificate_authority::load(created.cert_path, dir / "garbage.key");
  EXPECT_FALSE(bad_key.ca);
  EXPECT_TRUE(contains(bad_key.error, "garbage.key")) << bad_key.error;

  // A directory and a FIFO are refused without reading (a FIFO would block a plain open).
  auto directory = certificate_authority::load(created.cert_path, dir.path());
  EXPECT_FALSE(directory.ca);
  EXPECT_TRUE(contains(directory.error, "not a regular file")) << directory.error;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto fifo = certificate_authority::load(created.cert_path, dir / "fifo");
  EXPECT_FALSE(fifo.ca);
  EXPECT_TRUE(contains(fifo.error, "not a regular file")) << fifo.error;
}

TEST(TlsCertificateAuthority, EncryptedKeyIsRefusedWithoutPrompting) {
  test::temp_dir dir;
  auto created = create_ca(dir.path(), "Test", false);
  ASSERT_TRUE(created.ok) << created.error;
  auto loaded = certificate_authority::load(created.cert_path, created.key_path);
  ASSERT_TRUE(loaded.ca);
  bio_ptr bio(BIO_new(BIO_s_mem()));
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), loaded.ca->key(), EVP_aes_256_cbc(), nullptr,
                                          0, nullptr, const_cast<char*>("secret")),
            1);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  test::write_file(dir / "enc.key", std::string_view(data, static_cast<std::size_t>(n)));
  auto enc = certificate_authority::load(created.cert_path, dir / "enc.key");
  EXPECT_FALSE(enc.ca);
  EXPECT_TRUE(contains(enc.error, "encrypted")) << enc.error;
}

}  // namespace
}  // namespace airlock::tls
