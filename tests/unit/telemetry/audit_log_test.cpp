#include "telemetry/audit_log.hpp"

#include "../support/file_size_cap.hpp"
#include "../support/skip.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace airlock::telemetry {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* all_keys[] = {
    "time",      "agent",       "method",   "scheme", "host",          "port",   "path",
    "protocol",  "rule",        "decision", "reason", "detail",        "status", "bytes_in",
    "bytes_out", "duration_ms", "upstream", "client", "policy_version"};

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-audit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = (dir_ / "audit.log").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }
  static std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static audit_record sample(std::string_view detail = "d") {
    audit_record r;
    r.time = std::chrono::system_clock::now();
    r.agent = "coder";
    r.method = "GET";
    r.scheme = "http";
    r.host = "example.com";
    r.port = 80;
    r.path = "/";
    r.decision = "deny";
    r.reason = "host_denied";
    r.detail = detail;
    r.status = 403;
    r.client = "127.0.0.1:1234";
    r.policy_version = "v1";
    return r;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(AuditLogTest, ManyThreadsWriteWholeParsableLinesInPerThreadOrder) {
  constexpr int threads = 8;
  constexpr int per_thread = 3000;
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&log, t] {
      for (int i = 0; i < per_thread; ++i) {
        // Vary the length so lines straddle the 64 KiB flush boundary at different offsets.
        std::string detail = std::to_string(t) + ":" + std::to_string(i) + ":" +
                             std::string(static_cast<std::size_t>(i % 97), 'x') + "\"\n";
        audit_record r = sample(detail);
        r.duration = std::chrono::microseconds(i);
        log->write(r);
      }
    });
  }
  for (auto& th : pool)
    th.join();
  EXPECT_EQ(log->written_records(), static_cast<std::uint64_t>(threads * per_thread));
  log.reset();  // the destructor flushes everything

  auto lines = read_lines(path_);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(threads * per_thread));
  std::map<int, int> next;  // thread -> next expected sequence number
  for (const auto& line : lines) {
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    const auto& obj = v.as_object();
    ASSERT_EQ(obj.size(), std::size(all_keys));
    for (const char* key : all_keys)
      ASSERT_TRUE(obj.contains(key)) << key << " in " << line;
    std::string detail(obj.at("detail").as_string());
    int t = std::stoi(detail.substr(0, detail.find(':')));
    int i = std::stoi(detail.substr(detail.find(':') + 1));
    ASSERT_EQ(next[t], i) << "records of one thread out of order or lost";
    ++next[t];
    EXPECT_EQ(obj.at("duration_ms").to_number<double>(), i / 1000.0);
  }
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(next[t], per_thread);
}

TEST_F(AuditLogTest, OffWritesNothingAnywhere) {
  bool off_existed = fs::exists("off");
  std::string error;
  auto log = audit_log::open("off", error);
  ASSERT_TRUE(log);
  EXPECT_TRUE(error.empty());
  for (int i = 0; i < 100; ++i)
    log->write(sample());
  log->flush();
  EXPECT_TRUE(log->reopen());
  EXPECT_EQ(log->written_records(), 0u);
  log.reset();
  EXPECT_EQ(fs::exists("off"), off_existed) << "\"off\" must not create a file named off";
}

TEST_F(AuditLogTest, SpecialCharactersInDetailAreEscaped) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  std::string detail = "a \"quoted\" \\path\\ with\nnewline\r\tand\x01 control, \xC3\xA9, bad \xFF";
  log->write(sample(detail));
  log->flush();
  std::string text = read_all(path_);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "a record must be exactly one line";
  auto v = boost::json::parse(text).as_object();
  EXPECT_EQ(std::string(v.at("detail").as_string()),
            "a \"quoted\" \\path\\ with\nnewline\r\tand\x01 control, \xC3\xA9, bad \xEF\xBF\xBD");
  EXPECT_TRUE(v.at("rule").is_null());
}

TEST_F(AuditLogTest, FlushMakesRecordsVisibleWithoutClosing) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  log->write(sample());
  log->write(sample());
  log->flush();
  EXPECT_EQ(read_lines(path_).size(), 2u);
}

TEST_F(AuditLogTest, BackgroundFlusherWritesWithoutFlushCall) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  log->write(sample());
  // The flusher runs every 100 ms; allow generous slack for a loaded CI machine.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (read_lines(path_).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(read_lines(path_).size(), 1u);
}

TEST_F(AuditLogTest, SizeTriggeredFlushDoesNotWaitForTheTimer) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  // 200 records of ~1 KiB exceed 64 KiB: the writer wakes the flusher; most of the data must
  // be out long before a timer-only flusher could have written everything.
  std::string detail(1000, 'y');
  for (int i = 0; i < 200; ++i)
    log->write(sample(detail));
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fs::file_size(path_) < 64 * 1024 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(fs::file_size(path_), 64u * 1024);
}

TEST_F(AuditLogTest, AppendsToExistingFileWithRestrictiveMode) {
  {
    std::ofstream out(path_);
    out << "previous line\n";
  }
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  log->write(sample());
  log.reset();
  auto lines = read_lines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "previous line");

  // A new file gets 0640 (less whatever the umask removes).
  std::string fresh = (dir_ / "fresh.log").string();
  log = audit_log::open(fresh, error);
  ASSERT_TRUE(log) << error;
  mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640 & ~mask);
  // Not inherited by children (the launcher's agents).
  int fd_flags = -1;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = fs::read_symlink(entry.path(), ec);
    if (!ec && target == fresh) fd_flags = ::fcntl(std::stoi(entry.path().filename()), F_GETFD);
  }
  ASSERT_NE(fd_flags, -1);
  EXPECT_TRUE(fd_flags & FD_CLOEXEC);
}

TEST_F(AuditLogTest, OpenErrors) {
  std::string error;
  EXPECT_FALSE(audit_log::open((dir_ / "missing" / "audit.log").string(), error));
  EXPECT_NE(error.find("missing/audit.log"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(audit_log::open("", error));
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_FALSE(audit_log::open(dir_.string(), error)) << "a directory is not a log file";
  EXPECT_FALSE(error.empty());
}

TEST_F(AuditLogTest, ReopenFollowsLogrotate) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  log->write(sample("before"));
  std::string rotated = path_ + ".1";
  fs::rename(path_, rotated);
  EXPECT_TRUE(log->reopen());
  log->write(sample("after"));
  log.reset();
  auto old_lines = read_lines(rotated);
  auto new_lines = read_lines(path_);
  ASSERT_EQ(old_lines.size(), 1u);
  ASSERT_EQ(new_lines.size(), 1u);
  EXPECT_NE(old_lines[0].find("\"before\""), std::string::npos);
  EXPECT_NE(new_lines[0].find("\"after\""), std::string::npos);
}

TEST_F(AuditLogTest, ReopenFailureKeepsTheOldFile) {
  std::string sub = (dir_ / "sub").string();
  fs::create_directory(sub);
  std::string p = sub + "/audit.log";
  std::string error;
  auto log = audit_log::open(p, error);
  ASSERT_TRUE(log) << error;
  fs::rename(p, dir_ / "moved.log");
  fs::remove(sub);  // the path cannot be created again
  EXPECT_FALSE(log->reopen());
  log->write(sample("still here"));
  log.reset();
  auto lines = read_lines((dir_ / "moved.log").string());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("still here"), std::string::npos);
}

TEST_F(AuditLogTest, DashGoesToStdout) {
  std::string captured = (dir_ / "stdout.txt").string();
  std::fflush(stdout);
  int saved = ::dup(STDOUT_FILENO);
  ASSERT_GE(saved, 0);
  int fd = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDOUT_FILENO);
  ::close(fd);
  {
    std::string error;
    auto log = audit_log::open("-", error);
    if (log) {
      log->write(sample("to stdout"));
    }
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  // fd 1 belongs to the process: the log must not have closed it.
  EXPECT_NE(::fcntl(STDOUT_FILENO, F_GETFD), -1);
  auto lines = read_lines(captured);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("to stdout"), std::string::npos);
}

TEST_F(AuditLogTest, FailingSinkCountsDroppedRecords) {
  // /dev/full accepts open(2) and fails every write(2) with ENOSPC.
  if (::access("/dev/full", W_OK) != 0) AIRLOCK_SKIP_UNLESS_CI("/dev/full not available");
  std::string error;
  auto log = audit_log::open("/dev/full", error);
  ASSERT_TRUE(log) << error;
  for (int i = 0; i < 10; ++i)
    log->write(sample());
  log->flush();
  EXPECT_EQ(log->written_records(), 10u);
  // They wait in memory for the disk to take them; the sink is reported unwritable.
  EXPECT_EQ(log->dropped_records(), 0u);
  EXPECT_FALSE(log->writable());
  EXPECT_GE(log->write_errors(), 1u);
}

TEST_F(AuditLogTest, FullDiskKeepsEveryLineWholeAndRecoversWithEveryRecord) {
  std::string error;
  auto log = audit_log::open(path_, error);
  ASSERT_TRUE(log) << error;
  EXPECT_TRUE(log->writable());
  log->write(sample("before"));
  log->flush();
  const auto first = read_all(path_).size();
  ASSERT_GT(first, 0u);
  {
    // Room for one more line and a half: the second line of a flush is cut in the middle.
    test::file_size_cap cap(first * 5 / 2);
    ASSERT_TRUE(cap.ok());
    for (int i = 0; i < 5; ++i)
      log->write(sample("during-" + std::to_string(i)));
    log->flush();
    EXPECT_FALSE(log->writable());
    EXPECT_GE(log->write_errors(), 1u);
    auto during = read_all(path_);
    ASSERT_FALSE(during.empty());
    EXPECT_EQ(during.back(), '\n') << "a cut line stayed in the file";
    EXPECT_EQ(read_lines(path_).size(), 2u);
    log->flush();  // a retry while still full changes nothing
    EXPECT_EQ(read_all(path_), during);
    cap.lift();
    log->write(sample("after"));
    log->flush();
    EXPECT_TRUE(log->writable());
  }
  auto lines = read_lines(path_);
  ASSERT_EQ(lines.size(), 7u);
  std::vector<std::string> details;
  for (const auto& l : lines) {
    boost::system::error_code ec;
    auto v = boost::json::parse(l, ec);
    ASSERT_FALSE(ec) << "unparsable line: " << l;
    details.emplace_back(v.as_object().at("detail").as_string());
  }
  EXPECT_EQ(details, (std::vector<std::string>{"before", "during-0", "during-1", "during-2",
                                               "during-3", "during-4", "after"}));
  EXPECT_EQ(log->dropped_records(), 0u);
}

TEST_F(AuditLogTest, StuckSinkBoundsMemoryAndDropsInsteadOfBlocking) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string error;
  // Opening the pipe by its /proc path gives the log its own descriptor to the write end; the
  // 64 KiB pipe fills at once and the flusher blocks in write(2) while nobody reads.
  auto log = audit_log::open("/proc/self/fd/" + std::to_string(fds[1]), error);
  ASSERT_TRUE(log) << error;
  ::close(fds[1]);
  std::string detail(1000, 'z');
  constexpr int total = 24000;  // ~24 MiB: more than the 16 MiB the log may hold
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < total; ++i)
    log->write(sample(detail));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "write() must not block";
  EXPECT_GT(log->dropped_records(), 0u);
  EXPECT_EQ(log->written_records() + log->dropped_records(), static_cast<std::uint64_t>(total));

  // Drain the pipe so that the destructor's final flush completes.
  std::atomic<std::size_t> lines{0};
  std::thread reader([&] {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t k = 0; k < n; ++k)
        lines += buf[k] == '\n';
    }
  });
  auto written = log->written_records();
  log.reset();
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(lines.load(), written);
}

}  // namespace
}  // namespace airlock::telemetry
