// interception::built_from: a reload rebuilds the TLS interception when the CA files change,
// by name or by content (a CA or an upstream bundle rewritten in place under the same name).

#include "proxy/interception.hpp"

#include "tls/ca.hpp"
#include "tls/leaf_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace airlock::proxy {
namespace {

namespace fs = std::filesystem;

class Interception : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("airlock-interception-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  policy::model::tls new_ca(const fs::path& where, bool force) {
    const auto made = tls::create_ca(where, "Airlock test CA", force);
    EXPECT_TRUE(made.ok) << made.error;
    policy::model::tls t;
    t.ca_cert = made.cert_path.string();
    t.ca_key = made.key_path.string();
    return t;
  }

  fs::path dir_;
};

TEST_F(Interception, SameFilesSameContentIsBuiltFrom) {
  const auto files = new_ca(dir_, false);
  std::string error;
  auto built = interception::create(files, nullptr, error);
  ASSERT_TRUE(built) << error;
  EXPECT_TRUE(built->built_from(files));
}

TEST_F(Interception, OtherFileNamesAreNot) {
  const auto files = new_ca(dir_, false);
  std::string error;
  auto built = interception::create(files, nullptr, error);
  ASSERT_TRUE(built) << error;
  auto other = files;
  other.ca_cert = (dir_ / "./ca.crt").string();
  EXPECT_FALSE(built->built_from(other));
  other = files;
  other.upstream_ca = (dir_ / "bundle.pem").string();
  EXPECT_FALSE(built->built_from(other));
}

TEST_F(Interception, ACaRewrittenInPlaceIsNot) {
  const auto files = new_ca(dir_, false);
  std::string error;
  auto built = interception::create(files, nullptr, error);
  ASSERT_TRUE(built) << error;
  const auto again = new_ca(dir_, true);  // same names, new key and certificate
  ASSERT_EQ(again.ca_cert, files.ca_cert);
  EXPECT_FALSE(built->built_from(files));
  auto rebuilt = interception::create(files, nullptr, error);
  ASSERT_TRUE(rebuilt) << error;
  EXPECT_TRUE(rebuilt->built_from(files));
  EXPECT_NE(rebuilt->leaves->minter().ca().fingerprint(),
            built->leaves->minter().ca().fingerprint());
}

TEST_F(Interception, AnUpstreamBundleRewrittenInPlaceIsNot) {
  auto files = new_ca(dir_, false);
  const auto bundle = dir_ / "bundle.pem";
  fs::copy_file(files.ca_cert, bundle);  // any PEM certificate makes a bundle
  files.upstream_ca = bundle.string();
  std::string error;
  auto built = interception::create(files, nullptr, error);
  ASSERT_TRUE(built) << error;
  EXPECT_TRUE(built->built_from(files));
  {
    std::ofstream out(bundle, std::ios::app);  // same name, more content
    out << "\n";
  }
  EXPECT_FALSE(built->built_from(files));
}

TEST_F(Interception, AMissingCertificateIsNot) {
  const auto files = new_ca(dir_, false);
  std::string error;
  auto built = interception::create(files, nullptr, error);
  ASSERT_TRUE(built) << error;
  fs::remove(files.ca_cert);
  EXPECT_FALSE(built->built_from(files));  // create() then reports why
}

}  // namespace
}  // namespace airlock::proxy
