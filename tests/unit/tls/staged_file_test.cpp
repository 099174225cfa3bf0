#include "tls/staged_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.hpp"

namespace airlock::tls {
namespace {

std::size_t entries(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
    ++n;
  return n;
}

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST(TlsStagedFile, WritesWithExactModeDespiteUmask) {
  test::temp_dir dir;
  const mode_t old = ::umask(077);
  staged_file f;
  std::string error;
  ASSERT_TRUE(f.stage(dir / "out", "hello", 0644, error)) << error;
  ASSERT_TRUE(f.commit(false, error)) << error;
  ::umask(old);
  EXPECT_EQ(test::read_file(dir / "out"), "hello");
  EXPECT_EQ(mode_of(dir / "out"), 0644u);
  EXPECT_EQ(entries(dir.path()), 1u);  // no temporary file left behind
}

TEST(TlsStagedFile, NoReplaceKeepsExistingTargetAndCleansUp) {
  test::temp_dir dir;
  test::write_file(dir / "out", "old");
  staged_file f;
  std::string error;
  ASSERT_TRUE(f.stage(dir / "out", "new", 0600, error)) << error;
  EXPECT_FALSE(f.commit(false, error));
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
  EXPECT_EQ(test::read_file(dir / "out"), "old");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(TlsStagedFile, NoReplaceRefusesDanglingSymlink) {
  test::temp_dir dir;
  std::filesystem::create_symlink(dir / "elsewhere", dir / "out");
  staged_file f;
  std::string error;
  ASSERT_TRUE(f.stage(dir / "out", "secret", 0600, error)) << error;
  EXPECT_FALSE(f.commit(false, error));
  EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));
}

TEST(TlsStagedFile, ReplaceSwapsContent) {
  test::temp_dir dir;
  test::write_file(dir / "out", "old");
  staged_file f;
  std::string error;
  ASSERT_TRUE(f.stage(dir / "out", "new", 0600, error)) << error;
  ASSERT_TRUE(f.commit(true, error)) << error;
  EXPECT_EQ(test::read_file(dir / "out"), "new");
  EXPECT_EQ(mode_of(dir / "out"), 0600u);
}

TEST(TlsStagedFile, UncommittedIsRemoved) {
  test::temp_dir dir;
  {
    staged_file f;
    std::string error;
    ASSERT_TRUE(f.stage(dir / "out", "data", 0600, error)) << error;
    EXPECT_EQ(entries(dir.path()), 1u);
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

TEST(TlsStagedFile, MissingDirectoryIsAnError) {
  test::temp_dir dir;
  staged_file f;
  std::string error;
  EXPECT_FALSE(f.stage(dir / "nope" / "out", "data", 0600, error));
  EXPECT_NE(error.find("nope"), std::string::npos) << error;
}

}  // namespace
}  // namespace airlock::tls
