#include "core/log.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace airlock::core {
namespace {

// Restores the process-wide level so tests do not leak into each other.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = get_log_level(); }
  void TearDown() override { set_log_level(saved_); }
  log_level saved_{};
};

TEST_F(LogTest, ParseKnownLevels) {
  struct row {
    const char* text;
    log_level level;
  };
  for (auto r : {row{"debug", log_level::debug}, row{"info", log_level::info},
                 row{"warn", log_level::warn}, row{"error", log_level::error}}) {
    log_level out = r.level == log_level::debug ? log_level::error : log_level::debug;
    EXPECT_TRUE(parse_log_level(r.text, out)) << r.text;
    EXPECT_EQ(out, r.level) << r.text;
  }
}

TEST_F(LogTest, ParseRejectsOthersAndLeavesOutputAlone) {
  for (const char* s : {"", "DEBUG", "Info", "warning", "err", "fatal", "trace", " info", "info ",
                        "info\n", "0", "3"}) {
    log_level out = log_level::warn;
    EXPECT_FALSE(parse_log_level(s, out)) << '"' << s << '"';
    EXPECT_EQ(out, log_level::warn) << s;
  }
  log_level out = log_level::warn;
  EXPECT_FALSE(parse_log_level(std::string_view("info\0x", 6), out));
}

TEST_F(LogTest, SetAndGet) {
  for (auto l : {log_level::debug, log_level::info, log_level::warn, log_level::error}) {
    set_log_level(l);
    EXPECT_EQ(get_log_level(), l);
  }
}

TEST_F(LogTest, LineFormat) {
  ::testing::internal::CaptureStderr();
  log_line(log_level::warn, "proxy", "hello world");
  std::string out = ::testing::internal::GetCapturedStderr();
  static const std::regex line(
      R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z warn proxy: hello world\n$)");
  EXPECT_TRUE(std::regex_match(out, line)) << out;
}

int evaluations = 0;
int counted() {
  return ++evaluations;
}

TEST_F(LogTest, MacroFiltersByLevelWithoutEvaluatingArguments) {
  evaluations = 0;
  set_log_level(log_level::warn);
  ::testing::internal::CaptureStderr();
  AIRLOCK_LOG(debug, "core", "not shown ", counted());
  AIRLOCK_LOG(info, "core", "not shown ", counted());
  AIRLOCK_LOG(warn, "core", "shown ", 1, ' ', counted());
  AIRLOCK_LOG(error, "core", "shown ", 2);
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(out.find("not shown"), std::string::npos) << out;
  EXPECT_NE(out.find(" warn core: shown 1 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" error core: shown 2\n"), std::string::npos) << out;
}

TEST_F(LogTest, ConcurrentLinesStayWhole) {
  constexpr int threads = 4, per_thread = 50;
  const std::string payload(200, 'p');
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i)
        log_line(log_level::info, "t" + std::to_string(t), payload);
    });
  }
  for (auto& th : pool)
    th.join();
  std::string out = ::testing::internal::GetCapturedStderr();
  std::istringstream in(out);
  std::string l;
  int lines = 0;
  static const std::regex whole(R"(^\S+ info t\d: p{200}$)");
  while (std::getline(in, l)) {
    ++lines;
    EXPECT_TRUE(std::regex_match(l, whole)) << l;
  }
  EXPECT_EQ(lines, threads * per_thread);
}

}  // namespace
}  // namespace airlock::core
