#include "launcher/trust_memo.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace airlock::launcher {
namespace {

class TrustMemo : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/airlock-memo-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<std::filesystem::path> memos() const {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      out.push_back(e.path());
    return out;
  }
  std::string dir_;
};

TEST_F(TrustMemo, RecallsWhatWasRememberedForTheSameKeyOnly) {
  EXPECT_FALSE(recall(dir_, "key one"));
  remember(dir_, "key one", "value one");
  remember(dir_, "key two\nwith lines\n", "value two");
  EXPECT_EQ(recall(dir_, "key one"), "value one");
  EXPECT_EQ(recall(dir_, "key two\nwith lines\n"), "value two");
  EXPECT_FALSE(recall(dir_, "key one "));
  EXPECT_FALSE(recall(dir_, ""));
  remember(dir_, "key one", "replaced");
  EXPECT_EQ(recall(dir_, "key one"), "replaced");
  EXPECT_EQ(memos().size(), 2u);  // no temporary file left behind
}

TEST_F(TrustMemo, AFileUnderTheKeysNameHoldingAnotherKeyIsAMiss) {
  remember(dir_, "the key", "the value");
  const auto files = memos();
  ASSERT_EQ(files.size(), 1u);
  // What a hash collision, or a file edited by hand, looks like: same name, another key.
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "forged\nanother key";
  EXPECT_FALSE(recall(dir_, "the key"));
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "no newline at all";
  EXPECT_FALSE(recall(dir_, "the key"));
}

TEST_F(TrustMemo, RefusesValuesOfMoreThanOneLineAndKeepsTheNewest) {
  remember(dir_, "k", "two\nlines");
  EXPECT_FALSE(recall(dir_, "k"));
  for (int i = 0; i < 6; ++i)
    remember(dir_, "key " + std::to_string(i), "v", 4);
  EXPECT_EQ(memos().size(), 4u);
  EXPECT_EQ(recall(dir_, "key 5"), "v");  // the one just written is never the one pruned
}

TEST_F(TrustMemo, MissingOrUnwritableDirectoryOnlyMisses) {
  const std::string gone = dir_ + "/missing";
  remember(gone, "k", "v");
  EXPECT_FALSE(recall(gone, "k"));
}

}  // namespace
}  // namespace airlock::launcher
