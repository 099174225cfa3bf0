// build_plan against symlinks a jailed run may have planted: in the --rw paths and --home DIR
// (an earlier run with the same options could write them), and swapped while the plan checks
// a path. On a real scratch tree, canonical() being realpath(3) as on the host.
#include "launcher/plan.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace airlock::launcher {
namespace {

namespace fs = std::filesystem;

class PlanLinks : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-plan-links-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(::realpath(tmpl, real), nullptr);
    root_ = real;
    for (const char* d : {"/home", "/work", "/shared/real", "/agent-home", "/victim"})
      fs::create_directories(root_ + d);
  }
  void TearDown() override { fs::remove_all(root_); }

  host_facts host() {
    host_facts h;
    h.uid = 1000;
    h.gid = 1000;
    h.cwd = root_ + "/work";
    h.home = root_ + "/home";
    h.canonical = [this](const std::string& p) -> std::optional<std::string> {
      for (auto& [path, s] : swapped_) {
        if (p == s.until) s.over = true;
        if (p == path && !s.over) return s.answer;
      }
      char out[PATH_MAX];
      if (!::realpath(p.c_str(), out)) return std::nullopt;
      return std::string(out);
    };
    h.is_dir = [](const std::string& p) {
      struct stat st;
      return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    };
    return h;
  }
  static options opts() {
    options o;
    o.command = {"true"};
    return o;
  }
  std::string error_of(const options& o) {
    auto r = build_plan(o, host());
    return r.value ? std::string() : r.error;
  }

  // canonical(path) answers `answer` until canonical(until) is asked: a directory on the way
  // is a link until the walk that checks links reaches it, as a concurrent swapper makes it.
  struct swap {
    std::string answer;
    std::string until;
    bool over = false;
  };
  std::map<std::string, swap> swapped_;
  std::string root_;
};

// A first run with --rw shared planted shared/cache -> victim; a second run with the same --rw
// and --ro shared/cache must not bind the victim.
TEST_F(PlanLinks, ALinkPlantedInARwPathIsRefusedForTheNextRunsPaths) {
  fs::create_directory_symlink(root_ + "/victim", root_ + "/shared/cache");
  auto o = opts();
  o.rw = {root_ + "/shared"};
  o.ro = {root_ + "/shared/cache"};
  const auto e = error_of(o);
  EXPECT_NE(e.find(root_ + "/shared/cache leads to " + root_ + "/victim, outside --rw " + root_ +
                   "/shared"),
            std::string::npos)
      << e;
  for (auto* list : {&o.rw, &o.ro}) {
    auto named = opts();
    named.rw = {root_ + "/shared"};
    list == &o.rw ? named.rw.push_back(root_ + "/shared/cache")
                  : named.ro.push_back(root_ + "/shared/cache");
    EXPECT_NE(error_of(named).find("leads to " + root_ + "/victim"), std::string::npos);
  }
  // A link that stays inside the --rw path is fine, as in the work directory.
  fs::create_directory_symlink(root_ + "/shared/real", root_ + "/shared/inside");
  o.ro = {root_ + "/shared/inside"};
  EXPECT_EQ(error_of(o), "");
  // Without the --rw (nothing of this run can write there), the path is the caller's to name.
  o = opts();
  o.ro = {root_ + "/shared/cache"};
  EXPECT_EQ(error_of(o), "");
}

TEST_F(PlanLinks, ALinkPlantedInTheHomeDirIsRefusedForTheNextRunsPaths) {
  fs::create_directories(root_ + "/agent-home/proj");
  fs::create_directory_symlink(root_ + "/victim", root_ + "/agent-home/cache");
  auto o = opts();
  o.home = root_ + "/agent-home";
  o.rw = {root_ + "/agent-home/cache"};
  EXPECT_NE(error_of(o).find("outside --home " + root_ + "/agent-home"), std::string::npos)
      << error_of(o);
  // --workdir through it too.
  o = opts();
  o.home = root_ + "/agent-home";
  o.workdir = root_ + "/agent-home/cache";
  EXPECT_NE(error_of(o).find("--workdir " + root_ + "/agent-home/cache: " + root_ +
                             "/agent-home/cache leads to " + root_ + "/victim"),
            std::string::npos)
      << error_of(o);
  o.workdir = root_ + "/agent-home/proj";
  EXPECT_EQ(error_of(o), "");
}

// With --home DIR, DIR covers the caller's home: its built-in hides (~/.docker and the like)
// would land inside DIR, where a link would refuse every run; they are left out. One that
// leads out of the home is still hidden.
TEST_F(PlanLinks, WithAHomeDirTheHomesOwnHidesAreLeftOut) {
  fs::create_directories(root_ + "/home/.docker");
  fs::create_directories(root_ + "/victim/kube");
  fs::create_directory_symlink(root_ + "/victim/kube", root_ + "/home/.kube");
  auto o = opts();
  o.home = root_ + "/agent-home";
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  const auto& hidden = r.value->hidden;
  EXPECT_EQ(std::count(hidden.begin(), hidden.end(), root_ + "/home/.docker"), 0);
  EXPECT_EQ(std::count(hidden.begin(), hidden.end(), root_ + "/victim/kube"), 1);
  // Without --home DIR, the caller's home is the jail's (a layer over it): both are hidden.
  r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(std::count(r.value->hidden.begin(), r.value->hidden.end(), root_ + "/home/.docker"), 1);
}

// resolve() saw the link (canonical: the victim), the walk that checks links then saw the
// directory again: the path that would be bound is not the one that was checked.
TEST_F(PlanLinks, APathSwappedWhileCheckedIsRefused) {
  fs::create_directories(root_ + "/work/deps/cache");
  auto o = opts();
  o.rw = {"deps/cache"};
  swapped_[root_ + "/work/deps/cache"] = {root_ + "/victim", root_ + "/work/deps"};
  const auto e = error_of(o);
  EXPECT_NE(e.find("--rw deps/cache: resolved to " + root_ + "/victim and then to " + root_ +
                   "/work/deps/cache while it was checked"),
            std::string::npos)
      << e;
  swapped_.clear();
  EXPECT_EQ(error_of(o), "");  // once it holds still, it is bound
}

}  // namespace
}  // namespace airlock::launcher
