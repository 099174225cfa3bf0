#include "tls/leaf_minter.hpp"

#include "../support/skip.hpp"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>

#include "minter_fixture.hpp"
#include "test_util.hpp"

namespace airlock::tls {
namespace {

using namespace std::chrono_literals;

class TlsLeafMinterTest : public test::MinterTest {
 protected:
  // X509_verify_cert of leaf against a store holding only our CA, as a TLS client would
  // (purpose sslserver). host / ip, when given, must match too. Returns the verify error.
  int verify(const leaf_certificate& leaf, const char* host, const char* ip) {
    x509_store_ptr store(X509_STORE_new());
    X509_STORE_add_cert(store.get(), ca_->cert());
    x509_store_ctx_ptr ctx(X509_STORE_CTX_new());
    X509_STORE_CTX_init(ctx.get(), store.get(), leaf.cert(), nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host != nullptr) X509_VERIFY_PARAM_set1_host(param, host, 0);
    if (ip != nullptr) X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
    return X509_STORE_CTX_get_error(ctx.get());
  }

  static std::vector<std::string> sans(X509* cert, int type) {
    std::vector<std::string> out;
    int crit = -1;
    auto* names =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, nullptr));
    if (names == nullptr) return out;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* gen = sk_GENERAL_NAME_value(names, i);
      if (gen->type != type) {
        out.push_back("<other type>");
        continue;
      }
      const ASN1_STRING* s = type == GEN_DNS ? gen->d.dNSName : gen->d.iPAddress;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<std::size_t>(ASN1_STRING_length(s)));
    }
    GENERAL_NAMES_free(names);
    return out;
  }

  static bool critical(X509* cert, int nid) {
    int idx = X509_get_ext_by_NID(cert, nid, -1);
    return idx >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert, idx)) == 1;
  }
};

TEST_F(TlsLeafMinterTest, DnsLeafHasTheLeafProfile) {
  const auto now = std::chrono::system_clock::now();
  auto leaf = mint("API.Example.com.");
  ASSERT_TRUE(leaf);
  X509* cert = leaf->cert();
  EXPECT_EQ(leaf->name().text, "api.example.com");
  EXPECT_EQ(X509_get_version(cert), X509_VERSION_3);
  EXPECT_EQ(name_to_string(X509_get_subject_name(cert)), "CN=api.example.com");
  EXPECT_EQ(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(ca_->cert())), 0);
  EXPECT_EQ(sans(cert, GEN_DNS), std::vector<std::string>{"api.example.com"});
  EXPECT_FALSE(critical(cert, NID_subject_alt_name));  // the subject is not empty
  // Validity: now-1h .. now+7d.
  EXPECT_NEAR(std::chrono::duration<double>(leaf->not_before() - (now - 1h)).count(), 0, 5);
  EXPECT_NEAR(std::chrono::duration<double>(leaf->not_after() - (now + 7 * 24h)).count(), 0, 5);
  // basicConstraints critical CA:FALSE.
  EXPECT_TRUE(critical(cert, NID_basic_constraints));
  EXPECT_EQ(X509_get_extension_flags(cert) & EXFLAG_CA, 0u);
  EXPECT_NE(X509_get_extension_flags(cert) & EXFLAG_BCONS, 0u);
  EXPECT_EQ(X509_check_ca(cert), 0);
  // keyUsage critical digitalSignature only; extendedKeyUsage serverAuth only.
  EXPECT_TRUE(critical(cert, NID_key_usage));
  EXPECT_EQ(X509_get_key_usage(cert), static_cast<std::uint32_t>(KU_DIGITAL_SIGNATURE));
  EXPECT_EQ(X509_get_extended_key_usage(cert), static_cast<std::uint32_t>(XKU_SSL_SERVER));
  // Key identifiers: AKI names the CA's SKI.
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(cert);
  const ASN1_OCTET_STRING* ca_ski = X509_get0_subject_key_id(ca_->cert());
  ASSERT_NE(aki, nullptr);
  ASSERT_NE(ca_ski, nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(aki, ca_ski), 0);
  EXPECT_NE(X509_get0_subject_key_id(cert), nullptr);
  // The shared leaf key is P-256 and matches the certificate.
  EXPECT_EQ(EVP_PKEY_get_id(leaf->key()), EVP_PKEY_EC);
  EXPECT_EQ(X509_check_private_key(cert, leaf->key()), 1);
  EXPECT_EQ(X509_cmp(leaf->ca_cert(), ca_->cert()), 0);
}

TEST_F(TlsLeafMinterTest, ChainVerifiesAndNameMatches) {
  auto leaf = mint("api.example.com");
  ASSERT_TRUE(leaf);
  EXPECT_EQ(verify(*leaf, "api.example.com", nullptr), X509_V_OK);
  EXPECT_EQ(X509_check_host(leaf->cert(), "api.example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(leaf->cert(), "API.EXAMPLE.COM", 0, 0, nullptr), 1);
  // Wrong names fail, including a parent, a child and a look-alike.
  for (const char* wrong : {"example.com", "x.api.example.com", "api.example.co", "evil.com"}) {
    EXPECT_NE(X509_check_host(leaf->cert(), wrong, 0, 0, nullptr), 1) << wrong;
    EXPECT_EQ(verify(*leaf, wrong, nullptr), X509_V_ERR_HOSTNAME_MISMATCH) << wrong;
  }
  // A DNS leaf does not pass for an IP address.
  EXPECT_NE(X509_check_ip_asc(leaf->cert(), "127.0.0.1", 0), 1);
}

TEST_F(TlsLeafMinterTest, ChainDoesNotVerifyAgainstAnotherCa) {
  test::temp_dir other_dir;
  auto other = test::make_ca(other_dir.path());
  ASSERT_TRUE(other);
  auto leaf = mint("api.example.com");
  x509_store_ptr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), other->cert());
  x509_store_ctx_ptr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf->cert(), nullptr);
  EXPECT_NE(X509_verify_cert(ctx.get()), 1);
  EXPECT_EQ(X509_STORE_CTX_get_error(ctx.get()), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST_F(TlsLeafMinterTest, Ipv4AndIpv6Leaves) {
  auto v4 = mint("127.0.0.1");
  ASSERT_TRUE(v4);
  EXPECT_TRUE(v4->name().is_ip);
  EXPECT_EQ(sans(v4->cert(), GEN_IPADD), std::vector<std::string>{std::string("\x7f\0\0\x01", 4)});
  EXPECT_EQ(X509_check_ip_asc(v4->cert(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_ip_asc(v4->cert(), "127.0.0.2", 0), 1);
  EXPECT_NE(X509_check_host(v4->cert(), "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(v4->cert(), "127.0.0.2", 0, 0, nullptr), 1);
  EXPECT_EQ(verify(*v4, nullptr, "127.0.0.1"), X509_V_OK);
  EXPECT_EQ(verify(*v4, nullptr, "10.0.0.1"), X509_V_ERR_IP_ADDRESS_MISMATCH);

  auto v6 = mint("[2001:db8::1]");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->name().text, "2001:db8::1");
  EXPECT_EQ(name_to_string(X509_get_subject_name(v6->cert())), "CN=2001:db8::1");
  EXPECT_EQ(X509_check_ip_asc(v6->cert(), "2001:db8:0::1", 0), 1);
  EXPECT_NE(X509_check_ip_asc(v6->cert(), "2001:db8::2", 0), 1);
  EXPECT_EQ(verify(*v6, nullptr, "2001:db8::1"), X509_V_OK);
}

TEST_F(TlsLeafMinterTest, IpLeafAlsoNamesTheOriginsNames) {
  // As for an IP-literal CONNECT: the IP first, then the verified origin certificate's names.
  const std::vector<leaf_name> also{{false, "localhost"}, {true, "127.0.0.1"}, {true, "::1"}};
  std::string error;
  auto leaf =
      minter_->mint(*parse_leaf_name("127.0.0.1"), also, error, std::chrono::system_clock::now());
  ASSERT_TRUE(leaf) << error;
  EXPECT_EQ(name_to_string(X509_get_subject_name(leaf->cert())), "CN=127.0.0.1");
  EXPECT_EQ(X509_check_host(leaf->cert(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf->cert(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf->cert(), "::1", 0), 1);
  EXPECT_NE(X509_check_host(leaf->cert(), "example.com", 0, 0, nullptr), 1);
  // The repeat of the IP is not written twice.
  EXPECT_EQ(sans(leaf->cert(), GEN_IPADD).size(), 3u);  // 127.0.0.1, "<other type>", ::1
  EXPECT_EQ(verify(*leaf, "localhost", nullptr), X509_V_OK);
  // And the names are read back from a certificate as minted.
  const auto names = subject_alt_names(leaf->cert());
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0].text, "127.0.0.1");
  EXPECT_EQ(names[1].text, "localhost");
  EXPECT_FALSE(names[1].is_ip);
  EXPECT_EQ(names[2].text, "::1");
  EXPECT_EQ(subject_alt_names(leaf->cert(), 1).size(), 1u);
}

TEST_F(TlsLeafMinterTest, LongNameGoesOnlyInACriticalSan) {
  const std::string name = std::string(60, 'a') + ".example.com";  // 72 characters
  auto leaf = mint(name);
  ASSERT_TRUE(leaf);
  EXPECT_EQ(X509_NAME_entry_count(X509_get_subject_name(leaf->cert())), 0);
  EXPECT_TRUE(critical(leaf->cert(), NID_subject_alt_name));
  EXPECT_EQ(sans(leaf->cert(), GEN_DNS), std::vector<std::string>{name});
  EXPECT_EQ(verify(*leaf, name.c_str(), nullptr), X509_V_OK);
}

TEST_F(TlsLeafMinterTest, RejectsNamesACertificateMustNotCarry) {
  for (std::string_view bad :
       {"", "*.example.com", "a.com,DNS:evil.com", "a b", "127.1", "example.com\n", "a..b"}) {
    std::string error;
    EXPECT_FALSE(minter_->mint(bad, error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST_F(TlsLeafMinterTest, SerialsAreRandomAndLeavesShareOneKey) {
  std::set<std::string> serials;
  std::shared_ptr<const leaf_certificate> first;
  for (int i = 0; i < 50; ++i) {
    auto leaf = mint("same.example");
    ASSERT_TRUE(leaf);
    bignum_ptr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf->cert()), nullptr));
    char* hex = BN_bn2hex(bn.get());
    serials.insert(hex);
    OPENSSL_free(hex);
    if (first) {
      EXPECT_EQ(EVP_PKEY_eq(first->key(), leaf->key()), 1);
    }
    first = leaf;
  }
  EXPECT_EQ(serials.size(), 50u);
}

TEST_F(TlsLeafMinterTest, LeafNeverOutlivesTheCa) {
  test::temp_dir short_dir;
  test::cert_spec spec;
  spec.not_after = 48h;  // the CA expires before a 7-day leaf would
  test::write_self_signed(spec, short_dir / "ca.crt", short_dir / "ca.key");
  auto loaded = certificate_authority::load(short_dir / "ca.crt", short_dir / "ca.key");
  ASSERT_TRUE(loaded.ca) << loaded.error;
  std::string error;
  auto minter = leaf_minter::create(loaded.ca, error);
  ASSERT_TRUE(minter) << error;
  auto leaf = minter->mint("api.example.com", error);
  ASSERT_TRUE(leaf) << error;
  EXPECT_EQ(leaf->not_after(), loaded.ca->not_after());
  // Once the CA has expired, minting fails with a clear error.
  EXPECT_FALSE(minter->mint("api.example.com", error, std::chrono::system_clock::now() + 72h));
  EXPECT_NE(error.find("expired"), std::string::npos) << error;
}

TEST_F(TlsLeafMinterTest, OpenSslCliVerifiesTheChain) {
  std::string out;
  if (test::run_command("openssl version", out) != 0) {
    AIRLOCK_SKIP_UNLESS_CI("no openssl CLI");
  }
  auto leaf = mint("api.example.com");
  ASSERT_TRUE(leaf);
  test::temp_dir tmp;
  test::write_file(tmp / "leaf.pem", leaf->chain_pem());
  const std::string ca = (dir_.path() / "ca.crt").string();
  const std::string leaf_pem = (tmp / "leaf.pem").string();
  EXPECT_EQ(test::run_command("openssl verify -CAfile " + ca + " " + leaf_pem, out), 0) << out;
  EXPECT_NE(out.find(": OK"), std::string::npos) << out;
  EXPECT_EQ(
      test::run_command("openssl verify -CAfile " + ca +
                            " -purpose sslserver -verify_hostname api.example.com " + leaf_pem,
                        out),
      0)
      << out;
  EXPECT_NE(
      test::run_command(
          "openssl verify -CAfile " + ca + " -verify_hostname other.example.com " + leaf_pem, out),
      0)
      << out;
  // The CLI computes the same fingerprint we print in `airlock ca show`.
  ASSERT_EQ(test::run_command("openssl x509 -noout -fingerprint -sha256 -in " + ca, out), 0);
  EXPECT_NE(out.find(ca_->fingerprint()), std::string::npos) << out << " vs " << ca_->fingerprint();
}

TEST_F(TlsLeafMinterTest, MintTime) {
  // Printed, not asserted: wall time depends on the machine's load; CPU time is the cost.
  constexpr int n = 500;
  std::string error;
  timespec cpu_start{};
  timespec cpu_end{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(minter_->mint("host" + std::to_string(i) + ".example.com", error)) << error;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
  const double wall_us = std::chrono::duration<double, std::micro>(elapsed).count() / n;
  const double cpu_us = ((cpu_end.tv_sec - cpu_start.tv_sec) * 1e9 +
                         static_cast<double>(cpu_end.tv_nsec - cpu_start.tv_nsec)) /
                        1e3 / n;
  std::printf("[ mint time ] %.1f us wall, %.1f us CPU per leaf (%d leaves)\n", wall_us, cpu_us, n);
  RecordProperty("mint_wall_us", std::to_string(wall_us));
  RecordProperty("mint_cpu_us", std::to_string(cpu_us));
}

}  // namespace
}  // namespace airlock::tls
