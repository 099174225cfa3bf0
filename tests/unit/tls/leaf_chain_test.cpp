// What the handshake sends after the minted leaf: nothing when the CA is a self-signed root (the
// client holds it as its trust anchor; RFC 8446 section 4.4.2), the CA certificate when it is
// an intermediate under another root, which a client trusting only that root needs to build
// the chain. Shown on real handshakes whose client trusts one root and nothing else.
#include "tls/ca.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_minter.hpp"

#include <gtest/gtest.h>

#include <atomic>

#include "handshake_util.hpp"

namespace airlock::tls {
namespace {

using namespace test;

// How many certificates the server sent (the leaf included), as the client's verify callback
// saw them: the store context's untrusted chain is the peer's Certificate message.
std::atomic<int> sent_certificates{-1};

int count_sent(int preverified, X509_STORE_CTX* ctx) {
  if (X509_STORE_CTX_get_error_depth(ctx) == 0) {
    sent_certificates = sk_X509_num(X509_STORE_CTX_get0_untrusted(ctx));
  }
  return preverified;
}

std::function<void(SSL*)> upstream_counting(std::string host) {
  return [host = std::move(host)](SSL* ssl) {
    upstream(host)(ssl);
    SSL_set_verify(ssl, SSL_VERIFY_PEER, &count_sent);
  };
}

// A CA loaded from files written in dir, named `common_name`: issued by `issuer`, or
// self-signed (with no path length limit, unlike `airlock ca init`'s) when that is null.
std::shared_ptr<const certificate_authority> load_ca(const temp_dir& dir,
                                                     const certificate_authority* issuer,
                                                     const std::string& common_name) {
  cert_spec spec;
  spec.common_name = common_name;
  if (issuer)
    write_issued(spec, *issuer, dir / "ca.crt", dir / "ca.key");
  else
    write_self_signed(spec, dir / "ca.crt", dir / "ca.key");
  auto loaded = certificate_authority::load(dir / "ca.crt", dir / "ca.key");
  EXPECT_TRUE(loaded.ca) << loaded.error;
  return loaded.ca;
}

class TlsLeafChainTest : public TlsHandshakeTest {
 protected:
  // A handshake with a leaf minted by `ca` for api.example.com, the client trusting only the
  // certificate at trusted_root; returns the result, with sent_certificates set.
  handshake_result handshake_under(std::shared_ptr<const certificate_authority> ca,
                                   const std::filesystem::path& trusted_root) {
    std::string error;
    auto minter = leaf_minter::create(std::move(ca), error);
    EXPECT_TRUE(minter) << error;
    if (!minter) return {};
    auto leaf = minter->mint("api.example.com", error);
    EXPECT_TRUE(leaf) << error;
    if (!leaf) return {};
    auto client = make_client_context(trusted_root, error);
    EXPECT_TRUE(client) << error;
    if (!client) return {};
    sent_certificates = -1;
    return run_handshake(*server_ctx_, leaf.get(), *client, upstream_counting("api.example.com"));
  }
};

TEST_F(TlsLeafChainTest, ARootCaIsNotSentAfterTheLeaf) {
  ASSERT_TRUE(ca_->self_signed());
  auto leaf = mint("api.example.com");
  ASSERT_TRUE(leaf);
  EXPECT_EQ(leaf->chain_cert(), nullptr);
  EXPECT_EQ(X509_cmp(leaf->ca_cert(), ca_->cert()), 0);  // still known, for chain_pem

  auto r = handshake_under(ca_, dir_ / "ca.crt");
  ASSERT_TRUE(r.client_done && r.server_done);
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.echoed, "pong");
  EXPECT_EQ(sent_certificates.load(), 1);
}

TEST_F(TlsLeafChainTest, AnIntermediateCaIsSentAndTheClientOfTheRootVerifies) {
  // A root that allows intermediates below it, as an organisation's would.
  temp_dir root_dir, int_dir;
  auto root = load_ca(root_dir, nullptr, "Organisation Root CA");
  ASSERT_TRUE(root);
  auto intermediate = load_ca(int_dir, root.get(), "Test Intermediate CA");
  ASSERT_TRUE(intermediate);
  EXPECT_FALSE(intermediate->self_signed());
  std::string error;
  auto minter = leaf_minter::create(intermediate, error);
  ASSERT_TRUE(minter) << error;
  auto leaf = minter->mint("api.example.com", error);
  ASSERT_TRUE(leaf) << error;
  ASSERT_NE(leaf->chain_cert(), nullptr);
  EXPECT_EQ(X509_cmp(leaf->chain_cert(), intermediate->cert()), 0);

  // The client trusts the root only: without the intermediate it could not build the chain.
  auto r = handshake_under(intermediate, root_dir / "ca.crt");
  ASSERT_TRUE(r.client_done && r.server_done);
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.echoed, "pong");
  EXPECT_EQ(sent_certificates.load(), 2);
}

TEST_F(TlsLeafChainTest, ASelfIssuedCaSignedByAnotherKeyIsSent) {
  // A key rollover: the new CA names itself as issuer, but the old key signed it, so a client
  // holding the old root needs it.
  temp_dir old_dir, new_dir;
  auto old_root = load_ca(old_dir, nullptr, "Rollover CA");
  ASSERT_TRUE(old_root);
  EXPECT_TRUE(old_root->self_signed());
  auto rolled = load_ca(new_dir, old_root.get(), "Rollover CA");
  ASSERT_TRUE(rolled);
  EXPECT_EQ(
      X509_NAME_cmp(X509_get_subject_name(rolled->cert()), X509_get_issuer_name(rolled->cert())),
      0);
  EXPECT_FALSE(rolled->self_signed());

  auto r = handshake_under(rolled, old_dir / "ca.crt");
  ASSERT_TRUE(r.client_done && r.server_done);
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(sent_certificates.load(), 2);
}

}  // namespace
}  // namespace airlock::tls
