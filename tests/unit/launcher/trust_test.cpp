#include "launcher/trust.hpp"

#include "launcher/java_trust.hpp"
#include "launcher/trust_memo.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace airlock::launcher {
namespace {

// A throwaway self-signed certificate (CN "jail test CA"; no key anywhere) and its OpenSSL
// subject hash, as `openssl x509 -noout -subject_hash` prints it.
constexpr const char* test_ca =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBgzCCASmgAwIBAgIUcOX2QxBrNj0vl4NxK6riSwhWCZkwCgYIKoZIzj0EAwIw\n"
    "FzEVMBMGA1UEAwwMamFpbCB0ZXN0IENBMB4XDTI2MTEyMTE0Mzk0M1oXDTI2MTEy\n"
    "MzE0Mzk0M1owFzEVMBMGA1UEAwwMamFpbCB0ZXN0IENBMFkwEwYHKoZIzj0CAQYI\n"
    "KoZIzj0DAQcDQgAEazt5v7gXqNenazf+CHdmvGtJwlea0M8ssJ8PvwYQzLMxGukx\n"
    "lLS2mt6+uH4BMnP96wMpFDJ6X1gwe942VB1sY6NTMFEwHQYDVR0OBBYEFDX+TIQG\n"
    "TVuQTTU5AIXNKhqx6HxNMB8GA1UdIwQYMBaAFDX+TIQGTVuQTTU5AIXNKhqx6HxN\n"
    "MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgXSZEaUYHkBZaY07C\n"
    "UXUEJE7Y4Ie0Gc3tefiqKACuwBcCIQC68Pqqt8+x6rYYf8x+v/0/dyvntbWxts0d\n"
    "2WomCCEayg==\n"
    "-----END CERTIFICATE-----\n";
constexpr const char* test_ca_hash = "c66ce58c.0";

class LauncherTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/airlock-trust-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    // The trust cache (and its memos) below this test's directory, never in the real home.
    if (const char* old = std::getenv("XDG_CACHE_HOME")) saved_cache_ = old;
    ::setenv("XDG_CACHE_HOME", (dir_ + "/cache").c_str(), 1);
  }
  void TearDown() override {
    if (saved_cache_) {
      ::setenv("XDG_CACHE_HOME", saved_cache_->c_str(), 1);
    } else {
      ::unsetenv("XDG_CACHE_HOME");
    }
    std::filesystem::remove_all(dir_);
  }
  std::string file(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    made_.push_back(path);
    return path;
  }
  static const staged_file* find(const std::vector<staged_file>& files, const std::string& path) {
    for (const auto& f : files) {
      if (f.path == path) return &f;
    }
    return nullptr;
  }

  std::string dir_;
  std::vector<std::string> made_;
  std::optional<std::string> saved_cache_;
};

TEST_F(LauncherTrust, WithoutCaTheSystemBundleIsBoundNotCopied) {
  trust_spec spec;
  spec.system_bundle = file("bundle.crt", "system certificates\n");
  std::vector<staged_file> files;
  bool java_made = true;
  ASSERT_TRUE(build_trust_files(spec, "trust", files, java_made));
  EXPECT_FALSE(java_made);
  ASSERT_EQ(files.size(), 2u);
  for (const char* path : {"trust/ca-bundle.crt", "trust/certs/ca-bundle.crt"}) {
    const auto* f = find(files, path);
    ASSERT_NE(f, nullptr) << path;
    // Canonical: a symlink would resolve inside the jail's staging root, not the host's.
    char real[4096];
    ASSERT_NE(::realpath(spec.system_bundle.c_str(), real), nullptr);
    EXPECT_EQ(f->bind_from, real);
    EXPECT_TRUE(f->content.empty());
  }
}

TEST_F(LauncherTrust, WithoutCaASymlinkedBundleIsBoundAtItsTarget) {
  trust_spec spec;
  const std::string target = file("real.crt", "system certificates\n");
  const std::string link = dir_ + "/link.crt";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  made_.push_back(link);
  spec.system_bundle = link;
  std::vector<staged_file> files;
  bool java_made = false;
  ASSERT_TRUE(build_trust_files(spec, "trust", files, java_made));
  const auto* f = find(files, "trust/ca-bundle.crt");
  ASSERT_NE(f, nullptr);
  char real[4096];
  ASSERT_NE(::realpath(target.c_str(), real), nullptr);
  EXPECT_EQ(f->bind_from, real);
}

TEST_F(LauncherTrust, WithCaTheBundleAddsItAndTheHashNamesIt) {
  trust_spec spec;
  spec.system_bundle = file("bundle.crt", "system certificates without a newline");
  spec.airlock_ca = file("ca.crt", test_ca);
  std::vector<staged_file> files;
  bool java_made = false;
  ASSERT_TRUE(build_trust_files(spec, "trust", files, java_made));
  const auto* bundle = find(files, "trust/ca-bundle.crt");
  ASSERT_NE(bundle, nullptr);
  EXPECT_TRUE(bundle->bind_from.empty());
  EXPECT_EQ(bundle->content, "system certificates without a newline\n# Airlock CA (" +
                                 *spec.airlock_ca + ")\n" + test_ca);
  // The copies are hard links in the staging tmpfs: the same bytes, written once.
  const auto* dir_copy = find(files, "trust/certs/ca-bundle.crt");
  ASSERT_NE(dir_copy, nullptr);
  EXPECT_EQ(dir_copy->link_to, "trust/ca-bundle.crt");
  const auto* ca = find(files, "trust/airlock-ca.crt");
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->content, test_ca);
  const auto* hashed = find(files, std::string("trust/certs/") + test_ca_hash);
  ASSERT_NE(hashed, nullptr);
  EXPECT_EQ(hashed->link_to, "trust/airlock-ca.crt");
  // Links only ever point back at a file written before them.
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].link_to.empty()) continue;
    bool earlier = false;
    for (std::size_t j = 0; j < i; ++j)
      earlier = earlier || files[j].path == files[i].link_to;
    EXPECT_TRUE(earlier) << files[i].path;
  }
}

TEST_F(LauncherTrust, WithoutSystemBundleOnlyTheCaIsTrusted) {
  trust_spec spec;
  spec.system_bundle = dir_ + "/missing.crt";
  spec.airlock_ca = file("ca.crt", test_ca);
  std::vector<staged_file> files;
  bool java_made = false;
  ASSERT_TRUE(build_trust_files(spec, "trust", files, java_made));
  const auto* bundle = find(files, "trust/ca-bundle.crt");
  ASSERT_NE(bundle, nullptr);
  EXPECT_EQ(bundle->content, "# Airlock CA (" + *spec.airlock_ca + ")\n" + test_ca);

  // Neither a CA nor a system bundle: an empty bundle, still a file (not a bind).
  trust_spec none;
  none.system_bundle = dir_ + "/missing.crt";
  std::vector<staged_file> empty;
  ASSERT_TRUE(build_trust_files(none, "trust", empty, java_made));
  const auto* e = find(empty, "trust/ca-bundle.crt");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->bind_from.empty());
  EXPECT_TRUE(e->content.empty());
}

TEST_F(LauncherTrust, RefusesWhatIsNotACertificate) {
  trust_spec spec;
  spec.system_bundle = file("bundle.crt", "system\n");
  spec.airlock_ca = file("ca.crt", "-----BEGIN CERTIFICATE-----\nnot base64\n");
  std::vector<staged_file> files;
  bool java_made = false;
  EXPECT_FALSE(build_trust_files(spec, "trust", files, java_made));
  spec.airlock_ca = dir_ + "/missing-ca.crt";
  EXPECT_FALSE(build_trust_files(spec, "trust", files, java_made));
}

TEST_F(LauncherTrust, SubjectHashIsRememberedAndRecalledWithoutParsing) {
  trust_spec spec;
  spec.system_bundle = file("bundle.crt", "system\n");
  spec.airlock_ca = file("ca.crt", test_ca);
  std::vector<staged_file> files;
  bool java_made = false;
  ASSERT_TRUE(build_trust_files(spec, "trust", files, java_made));
  ASSERT_NE(find(files, std::string("trust/certs/") + test_ca_hash), nullptr);
  const auto cache = java_cache_dir();
  ASSERT_TRUE(cache);
  ASSERT_EQ(cache->rfind(dir_, 0), 0u) << *cache;
  EXPECT_EQ(recall(*cache, std::string("airlock-subject-hash-v1\n") + test_ca), test_ca_hash);
  // A hit is taken as it is: the memo (made here by hand) names bytes that do not even parse,
  // so only the memo can have answered. Memos are only ever written for bytes that parsed.
  const std::string odd = "-----BEGIN CERTIFICATE-----\nnot base64\n";
  remember(*cache, "airlock-subject-hash-v1\n" + odd, "0badf00d.0");
  spec.airlock_ca = file("odd.crt", odd);
  std::vector<staged_file> again;
  ASSERT_TRUE(build_trust_files(spec, "trust", again, java_made));
  EXPECT_NE(find(again, "trust/certs/0badf00d.0"), nullptr);
}

TEST_F(LauncherTrust, JavaStoreNameIsTheSameRememberedOrNot) {
  trust_spec spec;
  spec.java_cacerts = file("cacerts", "store bytes");
  spec.keytool = "/usr/bin/keytool";
  const auto plain = java_store_name(spec, test_ca);
  ASSERT_TRUE(plain);
  const std::string cache = dir_ + "/memos";
  ASSERT_EQ(::mkdir(cache.c_str(), 0700), 0);
  EXPECT_EQ(java_store_name(spec, test_ca, cache), plain);  // computed, then remembered
  EXPECT_EQ(java_store_name(spec, test_ca, cache), plain);  // recalled
  // A replaced cacerts changes the key, so the memo does not answer for it.
  const std::string replacement = file("cacerts.new", "store bytes");
  ASSERT_EQ(::rename(replacement.c_str(), spec.java_cacerts.c_str()), 0);
  EXPECT_NE(java_store_name(spec, test_ca, cache), plain);
  EXPECT_EQ(java_store_name(spec, test_ca, cache), java_store_name(spec, test_ca));
}

TEST_F(LauncherTrust, JavaStoreNameFollowsTheCaAndCacerts) {
  trust_spec spec;
  spec.java_cacerts = file("cacerts", "store bytes");
  spec.keytool = "/usr/bin/keytool";
  const auto a = java_store_name(spec, test_ca);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size(), 36u);
  EXPECT_TRUE(a->ends_with(".jks"));
  EXPECT_EQ(java_store_name(spec, test_ca), a);  // stable: the cache is found again
  EXPECT_NE(java_store_name(spec, std::string(test_ca) + "\n"), a);  // another CA
  // A replaced cacerts (a new inode, as ca-certificates-java writes it) is another store.
  const std::string replacement = file("cacerts.new", "store bytes");
  ASSERT_EQ(::rename(replacement.c_str(), spec.java_cacerts.c_str()), 0);
  EXPECT_NE(java_store_name(spec, test_ca), a);
  spec.java_cacerts = dir_ + "/missing";
  EXPECT_FALSE(java_store_name(spec, test_ca));
}

TEST_F(LauncherTrust, CachedJavaStoreIsReusedWithoutKeytool) {
  trust_spec spec;
  spec.java_cacerts = file("cacerts", "store bytes");
  spec.keytool = "/nonexistent/keytool";  // would fail if it ran
  const auto name = java_store_name(spec, test_ca);
  ASSERT_TRUE(name);
  bool made = true;
  // Not cached yet: keytool must run, and cannot.
  EXPECT_FALSE(cached_java_store(spec, test_ca, dir_, made));
  EXPECT_FALSE(made);
  const std::string store = file(*name, "a cached store");
  const auto found = cached_java_store(spec, test_ca, dir_, made);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, store);
  EXPECT_FALSE(made);
}

TEST_F(LauncherTrust, JavaCacheDirectoryMustBePrivate) {
  const std::string cache = dir_ + "/cache";
  // Both candidates below this test's directory: nothing is made in the real home.
  const char* old = std::getenv("XDG_CACHE_HOME");
  const char* old_home = std::getenv("HOME");
  const std::string saved = old ? old : "", saved_home = old_home ? old_home : "";
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  ::setenv("HOME", (dir_ + "/home").c_str(), 1);
  auto dir = java_cache_dir();
  ASSERT_TRUE(dir);
  EXPECT_EQ(*dir, cache + "/airlock/java-trust");
  struct stat st;
  ASSERT_EQ(::stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Writable by others: not used (another candidate is taken instead).
  ASSERT_EQ(::chmod(dir->c_str(), 0777), 0);
  EXPECT_EQ(java_cache_dir(), dir_ + "/home/.cache/airlock/java-trust");
  ::setenv("HOME", saved_home.c_str(), 1);
  if (old) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
}

}  // namespace
}  // namespace airlock::launcher
