// The policy file and the files it names, read without blocking or reading without end, and
// the bounds of every duration key (red team s20, findings 1, 2 and 6).
#include "policy/loader.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace airlock::policy {
namespace {

std::string dump(const std::vector<load_error>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += e.to_string() + "\n";
  return out;
}

class PolicyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-policy-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fifo_ = (dir_ / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view content) {
    const auto path = dir_ / name;
    std::ofstream(path) << content;
    return path.string();
  }
  std::filesystem::path dir_;
  std::string fifo_;
};

TEST_F(PolicyFile, EmptyFileIsAnErrorNamingTheFile) {
  for (const char* text : {"", "\n\n", "  \t\n", "# generation 2 edited\n", "\xEF\xBB\xBF"}) {
    const std::string path = write("policy.yaml", text);
    const auto r = load_file(path);
    EXPECT_FALSE(r.ok());
    ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
    EXPECT_EQ(r.errors[0].file, path);
    EXPECT_EQ(r.errors[0].to_string().rfind(path + ": is empty (or only comments)", 0), 0u)
        << r.errors[0].to_string();
  }
  // `{}` refuses everything and is a policy; so is any document after comments.
  EXPECT_TRUE(load_file(write("policy.yaml", "{}\n")).ok());
  EXPECT_TRUE(load_file(write("policy.yaml", "# c\nmode: enforce\n")).ok());
}

TEST_F(PolicyFile, FifoAsThePolicyIsRefusedAtOnce) {
  // Before: fopen(3) waited for a writer for ever.
  const auto r = load_file(fifo_);
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].to_string(),
            fifo_ + ": is not a regular file (a FIFO, socket or device); a policy must be a file");
  const auto zero = load_file("/dev/zero");
  ASSERT_EQ(zero.errors.size(), 1u) << dump(zero.errors);
  EXPECT_NE(zero.errors[0].message.find("not a regular file"), std::string::npos);
}

TEST_F(PolicyFile, FifoAsAnIncludeIsRefusedAtOnce) {
  const auto r = load_file(write("policy.yaml", "include: [fifo]\n"));
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].file, fifo_);
  EXPECT_EQ(r.errors[0].key, "include[0]");
  EXPECT_NE(r.errors[0].message.find("not a regular file"), std::string::npos);
}

TEST_F(PolicyFile, FifoAsTlsFilesIsRefusedAtOnce) {
  for (bool secrets : {true, false}) {
    load_options options;
    options.read_secrets = secrets;
    const auto r = load_file(
        write("policy.yaml", "tls: {ca_cert: fifo, ca_key: fifo, upstream_ca: fifo}\n"), options);
    ASSERT_FALSE(r.ok());
    ASSERT_EQ(r.errors.size(), secrets ? 3u : 2u) << dump(r.errors);
    EXPECT_EQ(r.errors[0].key, "tls.ca_cert");
    EXPECT_EQ(r.errors[0].message, "'" + fifo_ + "' is not a regular file");
  }
}

// ---------------------------------------------------------------- duration bounds

void expect_duration_error(const std::string& key, std::string_view value,
                           std::string_view message) {
  const auto dot = key.find('.');
  const std::string yaml =
      key.substr(0, dot) + ":\n  " + key.substr(dot + 1) + ": " + std::string(value) + "\n";
  const auto r = load_string(yaml, "p.yaml");
  ASSERT_EQ(r.errors.size(), 1u) << yaml << dump(r.errors);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[0].key, key);
  EXPECT_NE(r.errors[0].message.find(message), std::string::npos) << dump(r.errors);
}

TEST(DurationBounds, EveryTimeoutIsAtMostADay) {
  for (const char* key : {"limits.head_timeout", "limits.connect_timeout", "limits.dns_timeout",
                          "limits.idle_timeout", "limits.response_timeout", "limits.drain_timeout",
                          "approvals.timeout"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(
        load_string(std::string(key).replace(std::string(key).find('.'), 1, ":\n  ") + ": 24h\n",
                    "p.yaml")
            .ok());
    expect_duration_error(key, "86400001ms", "must be at most 24h");
    expect_duration_error(key, "25h", "must be at most 24h");
    // 106752d no longer fits steady_clock nanoseconds: not a duration at all, and the message
    // names the bound.
    expect_duration_error(key, "106752d", "at most 24h");
    // Past what a duration can be at all: named as invalid, with the bound.
    expect_duration_error(key, "9999999999999s", "invalid duration '9999999999999s'");
    expect_duration_error(key, "9999999999999s", "at most 24h");
  }
}

TEST(DurationBounds, BreakerWindowAndCooldown) {
  const std::string head = "agents:\n  a:\n    breaker: {max_failures: 1, ";
  for (const char* k : {"window", "cooldown"}) {
    SCOPED_TRACE(k);
    const auto r = load_string(head + k + ": 25h}\n", "p.yaml");
    ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
    EXPECT_EQ(r.errors[0].key, std::string("agents.a.breaker.") + k);
    EXPECT_EQ(r.errors[0].message, "must be at most 24h");
  }
}

}  // namespace
}  // namespace airlock::policy
