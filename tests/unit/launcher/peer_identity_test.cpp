// peer_identity against real processes: this test process plays the jail's init, its children
// the jail's programs, each holding the client end of a loopback connection it accepted.
#include "launcher/peer_identity.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace airlock::launcher {
namespace {

std::string real(const char* path) {
  char buf[PATH_MAX];
  return ::realpath(path, buf) ? std::string(buf) : std::string(path);
}

std::string sha256sum(const std::string& path) {
  std::string cmd = "sha256sum '" + path + "'";
  FILE* f = ::popen(cmd.c_str(), "r");
  char buf[65] = {};
  const bool ok = f && std::fread(buf, 1, 64, f) == 64;
  if (f) ::pclose(f);
  return ok ? std::string(buf, 64) : std::string();
}

std::string exe_of(pid_t pid) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// A child that connects to a fresh loopback listener and then runs `body` (which execs); the
// accepted end's addresses for the lookup.
struct connection {
  pid_t child = -1;
  int accepted = -1;
  sockaddr_storage peer{}, local{};

  ~connection() {
    if (child > 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    if (accepted >= 0) ::close(accepted);
  }
};

void start(connection& c, const std::function<void(int)>& body) {
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(l, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  c.child = ::fork();
  ASSERT_GE(c.child, 0);
  if (c.child == 0) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);  // inherited across exec on purpose
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(99);
    body(s);
    ::_exit(98);
  }
  socklen_t pl = sizeof c.peer, ll = sizeof c.local;
  c.accepted = ::accept4(l, reinterpret_cast<sockaddr*>(&c.peer), &pl, SOCK_CLOEXEC);
  ::close(l);
  ASSERT_GE(c.accepted, 0);
  ::getsockname(c.accepted, reinterpret_cast<sockaddr*>(&c.local), &ll);
}

// Waits (bounded) until the child runs something other than this test binary.
bool wait_exec(pid_t pid, const std::string& suffix = "") {
  const std::string self = exe_of(::getpid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string e = exe_of(pid);
    if (!e.empty() && e != self && (suffix.empty() || e.ends_with(suffix))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(PeerIdentity, NamesTheExecutableAndItsHash) {
  connection c;
  start(c, [](int) { ::execl("/bin/sleep", "sleep", "30", nullptr); });
  ASSERT_TRUE(wait_exec(c.child));
  peer_identity id(::getpid());
  std::string why;
  auto b = id.find(c.peer, c.local, why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->path, real("/bin/sleep"));
  EXPECT_EQ(b->sha256, sha256sum(real("/bin/sleep")));
  EXPECT_TRUE(b->ancestors.empty());           // the "init" itself is not listed
  auto again = id.find(c.peer, c.local, why);  // from the hash cache
  ASSERT_TRUE(again);
  EXPECT_EQ(again->sha256, b->sha256);
}

TEST(PeerIdentity, AnExecChainIsItsLastProgramAndAShellIsAnAncestor) {
  connection c;
  // sh forks sleep (not exec: the trailing `; true` keeps sh alive as the parent).
  start(c, [](int) { ::execl("/bin/sh", "sh", "-c", "sleep 30; true", nullptr); });
  ASSERT_TRUE(wait_exec(c.child));
  peer_identity id(::getpid());
  std::string why;
  // Both sh and its child sleep hold the socket: different programs, no identity.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::optional<net::peer_binary> b;
  do {
    b = id.find(c.peer, c.local, why);
  } while (b && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::sleep_for(std::chrono::milliseconds(5)), true));
  EXPECT_FALSE(b);
  EXPECT_NE(why.find("share the socket"), std::string::npos) << why;

  connection e;
  start(e, [](int) { ::execl("/bin/sh", "sh", "-c", "exec sleep 30", nullptr); });
  ASSERT_TRUE(wait_exec(e.child, "/sleep"));
  auto s = id.find(e.peer, e.local, why);
  ASSERT_TRUE(s) << why;
  EXPECT_EQ(s->path, real("/bin/sleep"));
}

TEST(PeerIdentity, DeletedAndMemfdExecutablesHaveNoIdentity) {
  char dir[] = "/tmp/airlock-peer-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string copy = std::string(dir) + "/sleepy";
  {
    std::ifstream in(real("/bin/sleep"), std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(::chmod(copy.c_str(), 0755), 0);
  peer_identity id(::getpid());
  std::string why;
  {
    connection c;
    start(c, [&](int) { ::execl(copy.c_str(), "sleepy", "30", nullptr); });
    ASSERT_TRUE(wait_exec(c.child));
    ASSERT_TRUE(id.find(c.peer, c.local, why)) << why;
    ASSERT_EQ(::unlink(copy.c_str()), 0);
    EXPECT_FALSE(id.find(c.peer, c.local, why));
    EXPECT_NE(why.find("(deleted)"), std::string::npos) << why;
  }
  ::rmdir(dir);

  std::string bytes;
  {
    std::ifstream in(real("/bin/sleep"), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  connection m;
  start(m, [&](int) {
    const int fd = ::memfd_create("agent", 0);
    if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      ::_exit(97);
    char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
    ::fexecve(fd, argv, environ);
  });
  ASSERT_TRUE(wait_exec(m.child));
  EXPECT_FALSE(id.find(m.peer, m.local, why));
  EXPECT_NE(why.find("/memfd:"), std::string::npos) << why;
}

// A copy of /bin/sleep made sparse to `size` bytes: it still runs (the ELF loader reads its
// head), and costs nothing to make however large it is.
std::string sparse_sleep(const std::string& dir, off_t size) {
  const std::string copy = dir + "/sleepy";
  {
    std::ifstream in(real("/bin/sleep"), std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  if (::chmod(copy.c_str(), 0755) != 0 || ::truncate(copy.c_str(), size) != 0) return {};
  return copy;
}

TEST(PeerIdentity, AnExecutableLargerThanTheCapHasNoIdentity) {
  char dir[] = "/tmp/airlock-peer-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string big = sparse_sleep(dir, off_t{1} << 30);  // 1 GiB, above the 256 MiB cap
  ASSERT_FALSE(big.empty());
  {
    connection c;
    start(c, [&](int) { ::execl(big.c_str(), "sleepy", "30", nullptr); });
    ASSERT_TRUE(wait_exec(c.child, "/sleepy"));
    peer_identity id(::getpid());
    std::string why;
    EXPECT_FALSE(id.find(c.peer, c.local, why));
    EXPECT_NE(why.find("more than the 268435456 the relay hashes"), std::string::npos) << why;
  }
  ::unlink(big.c_str());
  ::rmdir(dir);
}

TEST(PeerIdentity, AHashPastItsTimeOrAfterAStopIsAbandoned) {
  char dir[] = "/tmp/airlock-peer-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string huge = sparse_sleep(dir, off_t{1} << 40);  // 1 TiB: minutes to read
  ASSERT_FALSE(huge.empty());
  {
    connection c;
    start(c, [&](int) { ::execl(huge.c_str(), "sleepy", "30", nullptr); });
    ASSERT_TRUE(wait_exec(c.child, "/sleepy"));
    const peer_identity::hash_limits no_size_cap{std::uint64_t{1} << 50,
                                                 std::chrono::milliseconds(200)};
    std::string why;
    const auto t0 = std::chrono::steady_clock::now();
    peer_identity timed(::getpid(), "/proc", no_size_cap);
    EXPECT_FALSE(timed.find(c.peer, c.local, why));
    EXPECT_NE(why.find("took longer than 200 ms"), std::string::npos) << why;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));

    const std::atomic<bool> stopping{true};
    peer_identity stopped(::getpid(), "/proc", {std::uint64_t{1} << 50, std::chrono::hours(1)},
                          &stopping);
    EXPECT_FALSE(stopped.find(c.peer, c.local, why));
    EXPECT_EQ(why, "the relay is stopping");
  }
  ::unlink(huge.c_str());
  ::rmdir(dir);
}

TEST(PeerIdentity, AClientThatExitedHasNoIdentity) {
  connection c;
  start(c, [](int) { ::_exit(0); });
  int status = 0;
  ASSERT_EQ(::waitpid(c.child, &status, 0), c.child);
  c.child = -1;
  peer_identity id(::getpid());
  std::string why;
  EXPECT_FALSE(id.find(c.peer, c.local, why));
  EXPECT_FALSE(why.empty());
}

TEST(PeerIdentity, OtherAddressesAreNotFound) {
  peer_identity id(::getpid());
  sockaddr_storage a{}, b{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(1);
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  b = a;
  std::string why;
  EXPECT_FALSE(id.find(a, b, why));
  sockaddr_storage unix_addr{};
  unix_addr.ss_family = AF_UNIX;
  EXPECT_FALSE(id.find(unix_addr, unix_addr, why));
  EXPECT_EQ(why, "not a TCP connection");
}

}  // namespace
}  // namespace airlock::launcher
