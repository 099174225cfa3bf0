#include "policy/secret_reader.hpp"

#include "policy/secrets.hpp"
#include "secret_test_util.hpp"
#include "unprivileged.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace airlock::policy {
namespace {

using test::scoped_env;
using test::scratch_dir;

secret_read check(std::string raw) {
  return check_secret(raw, "'src'");
}

TEST(SecretReader, TrailingLineBreaksAreRemoved) {
  for (const char* raw : {"token-123", "token-123\n", "token-123\r\n", "token-123\n\n\r\n"}) {
    auto r = check(raw);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.value.reveal(), "token-123");
  }
}

TEST(SecretReader, LengthBounds) {
  EXPECT_EQ(check("").error, "'src' is empty");
  EXPECT_EQ(check("\n").error, "'src' is empty");
  EXPECT_NE(check("1234567").error.find("holds 7 bytes; a secret needs at least 8"),
            std::string::npos);
  EXPECT_TRUE(check("12345678").ok());
  EXPECT_TRUE(check(std::string(max_secret_bytes, 'a')).ok());
  EXPECT_TRUE(check(std::string(max_secret_bytes, 'a') + "\r\n").ok());
  EXPECT_EQ(check(std::string(max_secret_bytes + 1, 'a')).error,
            "'src' holds more than 16384 bytes");
}

TEST(SecretReader, RefusesWhatNoHeaderCanCarry) {
  for (std::string raw :
       {std::string("abcd\nefgh"), std::string("abcd\refgh"), std::string("abcd\0efgh", 9),
        std::string("abcd\x7f"
                    "efgh"),
        std::string("abcd\tefgh"),
        std::string("\x01"
                    "abcdefgh")}) {
    auto r = check(raw);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("holds a control character"), std::string::npos) << r.error;
    EXPECT_TRUE(r.value.empty());
  }
  EXPECT_EQ(check(" abcdefgh").error, "'src' starts or ends with white space");
  EXPECT_EQ(check("abcdefgh \n").error, "'src' starts or ends with white space");
  // Inner spaces and bytes above ASCII (obs-text) can be sent.
  EXPECT_TRUE(check("abc defgh").ok());
  EXPECT_TRUE(check("p\xc3\xa4ssw\xc3\xb6rd").ok());
}

TEST(SecretReader, CheckWipesTheRawBuffer) {
  std::string raw = "the-value-123\n";
  auto r = check_secret(raw, "x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(raw, std::string(14, '\0'));
  std::string bad = "bad\nvalue-123";
  EXPECT_FALSE(check_secret(bad, "x").ok());
  EXPECT_EQ(bad, std::string(13, '\0'));
}

TEST(SecretReader, EnvironmentVariable) {
  EXPECT_TRUE(valid_env_name("GITHUB_TOKEN"));
  EXPECT_TRUE(valid_env_name("_x1"));
  EXPECT_TRUE(valid_env_name("http_proxy"));
  EXPECT_FALSE(valid_env_name(""));
  EXPECT_FALSE(valid_env_name("1X"));
  EXPECT_FALSE(valid_env_name("A-B"));
  EXPECT_FALSE(valid_env_name("A=B"));
  EXPECT_FALSE(valid_env_name("A B"));
  EXPECT_FALSE(valid_env_name(std::string(256, 'A')));

  const std::string var = "AIRLOCK_TEST_READER_ENV";
  ::unsetenv(var.c_str());
  EXPECT_EQ(read_secret_env(var).error,
            "environment variable 'AIRLOCK_TEST_READER_ENV' is not set");
  {
    scoped_env e(var, "");
    EXPECT_EQ(read_secret_env(var).error,
              "environment variable 'AIRLOCK_TEST_READER_ENV' is empty");
  }
  {
    scoped_env e(var, "sk-live-0123456789\n");
    auto r = read_secret_env(var);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.value.reveal(), "sk-live-0123456789");
    EXPECT_TRUE(r.warning.empty());
  }
}

TEST(SecretReader, File) {
  scratch_dir d;
  const std::string path = d.write("gh", "ghp_file_value_0123456789\n");
  auto r = read_secret_file(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value.reveal(), "ghp_file_value_0123456789");
  EXPECT_TRUE(r.warning.empty()) << r.warning;

  const std::string missing = (d.path() / "nope").string();
  EXPECT_EQ(read_secret_file(missing).error,
            "cannot read '" + missing + "': No such file or directory");
  EXPECT_EQ(read_secret_file(d.path().string()).error,
            "'" + d.path().string() + "' is a directory");
  const std::string empty = d.write("empty", "");
  EXPECT_EQ(read_secret_file(empty).error, "'" + empty + "' is empty");
  const std::string big = d.write("big", std::string(max_secret_bytes + 3, 'a'));
  EXPECT_EQ(read_secret_file(big).error, "'" + big + "' is larger than 16384 bytes");
  const std::string limit = d.write("limit", std::string(max_secret_bytes, 'a') + "\r\n");
  EXPECT_TRUE(read_secret_file(limit).ok());
  const std::string over = d.write("over", std::string(max_secret_bytes + 1, 'a') + "\n");
  EXPECT_EQ(read_secret_file(over).error, "'" + over + "' holds more than 16384 bytes");
}

TEST(SecretReader, FileThatIsNotRegular) {
  scratch_dir d;
  // A FIFO with no writer: opening it must not block the load.
  const std::string fifo = (d.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_secret_file(fifo).error, "'" + fifo + "' is not a regular file");
  EXPECT_EQ(read_secret_file("/dev/zero").error, "'/dev/zero' is not a regular file");
}

TEST(SecretReader, FollowsSymbolicLinks) {
  // Kubernetes mounts a Secret as NAME -> ..data/NAME -> ..2024_01_01/NAME.
  scratch_dir d;
  d.write("..2024/token", "ghp_linked_value_012345");
  std::filesystem::create_directory_symlink("..2024", d.path() / "..data");
  std::filesystem::create_symlink("..data/token", d.path() / "token");
  auto r = read_secret_file((d.path() / "token").string());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value.reveal(), "ghp_linked_value_012345");
}

TEST(SecretReader, WarnsWhenOthersCanReadTheFile) {
  scratch_dir d;
  for (mode_t mode : {0600, 0400, 0700}) {
    auto r = read_secret_file(d.write("m" + std::to_string(mode), "value-0123456", mode));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r.warning.empty()) << mode;
  }
  for (mode_t mode : {0640, 0604, 0644, 0660}) {
    const std::string p = d.write("m" + std::to_string(mode), "value-0123456", mode);
    auto r = read_secret_file(p);
    ASSERT_TRUE(r.ok());
    char m[8];
    std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(mode));
    EXPECT_EQ(r.warning,
              "'" + p + "' is accessible by group or others (mode " + m + "); run chmod 600 on it");
  }
  // Unreadable: as an unprivileged user, also when the tests run as root (CI).
  const std::string p = d.write("unreadable", "value-0123456", 0000);
  ::chmod(d.path().c_str(), 0755);  // nobody may look into the folder, not read the file
  EXPECT_EQ(airlock::test::as_unprivileged([&]() -> std::string {
              const std::string want = "cannot read '" + p + "': Permission denied";
              const std::string got = read_secret_file(p).error;
              return got == want ? "" : "got '" + got + "', want '" + want + "'";
            }),
            "");
}

}  // namespace
}  // namespace airlock::policy
