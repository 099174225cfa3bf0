#include "launcher/peer_identity.hpp"

#include "core/str_cat.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace airlock::launcher {
namespace {

using core::str_cat;

std::optional<std::string> read_small(const std::string& path, std::size_t limit = 1 << 20) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::string> read_link(const std::string& path) {
  std::array<char, 4096> buf;
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= buf.size()) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

// An address and port as /proc/net/tcp{,6} prints them: the address's 32-bit words in host
// byte order as hex, the port as a hex number. Both are brought to the 16 bytes of an IPv6
// address (IPv4 as ::ffff:a.b.c.d) so a v4-mapped client compares equal.
struct wire_end {
  std::array<std::uint8_t, 16> addr{};
  std::uint16_t port = 0;
  bool operator==(const wire_end&) const = default;
};

std::optional<wire_end> parse_proc_end(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view hex = text.substr(0, colon);
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  wire_end e;
  std::uint8_t* out = hex.size() == 8 ? e.addr.data() + 12 : e.addr.data();
  if (hex.size() == 8) e.addr[10] = e.addr[11] = 0xFF;
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    const std::string word(hex.substr(w * 8, 8));
    char* end = nullptr;
    const auto v = static_cast<std::uint32_t>(std::strtoul(word.c_str(), &end, 16));
    if (end != word.c_str() + 8) return std::nullopt;
    std::memcpy(out + 4 * w, &v, 4);  // host order, as the kernel printed the word
  }
  const std::string port(text.substr(colon + 1));
  char* end = nullptr;
  const unsigned long p = std::strtoul(port.c_str(), &end, 16);
  if (end == port.c_str() || p > 0xFFFF) return std::nullopt;
  e.port = static_cast<std::uint16_t>(p);
  return e;
}

std::optional<wire_end> to_wire(const sockaddr_storage& ss) {
  wire_end e;
  if (ss.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    e.addr[10] = e.addr[11] = 0xFF;
    std::memcpy(e.addr.data() + 12, &v4->sin_addr, 4);
    e.port = ntohs(v4->sin_port);
    return e;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    std::memcpy(e.addr.data(), &v6->sin6_addr, 16);
    e.port = ntohs(v6->sin6_port);
    return e;
  }
  return std::nullopt;
}

// The inode of the socket whose local end is `client` and remote end `server`, from one of
// /proc/PID/net/tcp or tcp6 (fields: sl local rem st tx:rx tr:when retrnsmt uid timeout inode).
std::uint64_t socket_inode(const std::string& table, const wire_end& client,
                           const wire_end& server) {
  std::string_view rest = table;
  bool header = true;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (std::exchange(header, false)) continue;
    std::vector<std::string_view> f;
    std::size_t i = 0;
    while (i < line.size() && f.size() < 10) {
      while (i < line.size() && line[i] == ' ')
        ++i;
      const std::size_t start = i;
      while (i < line.size() && line[i] != ' ')
        ++i;
      if (i > start) f.push_back(line.substr(start, i - start));
    }
    if (f.size() < 10) continue;
    const auto local = parse_proc_end(f[1]), remote = parse_proc_end(f[2]);
    if (!local || !remote || !(*local == client) || !(*remote == server)) continue;
    return std::strtoull(std::string(f[9]).c_str(), nullptr, 10);
  }
  return 0;
}

// The init's descendants, breadth first, at most `limit` of them.
std::vector<pid_t> descendants(const std::string& proc, pid_t init, std::size_t limit) {
  std::vector<pid_t> out;
  std::deque<pid_t> queue{init};
  std::set<pid_t> seen{init};
  while (!queue.empty() && out.size() < limit) {
    const pid_t p = queue.front();
    queue.pop_front();
    const std::string tasks = str_cat(proc, '/', p, "/task");
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(tasks.c_str()), ::closedir);
    if (!dir) continue;
    while (const dirent* e = ::readdir(dir.get())) {
      if (e->d_name[0] == '.') continue;
      const auto children = read_small(str_cat(tasks, '/', e->d_name, "/children"));
      if (!children) continue;
      const char* s = children->c_str();
      char* end = nullptr;
      for (long c = std::strtol(s, &end, 10); end != s; c = std::strtol(s, &end, 10)) {
        s = end;
        const auto child = static_cast<pid_t>(c);
        if (seen.insert(child).second && out.size() < limit) {
          out.push_back(child);
          queue.push_back(child);
        }
      }
    }
  }
  return out;
}

bool holds_socket(const std::string& proc, pid_t pid, const std::string& link) {
  const std::string fds = str_cat(proc, '/', pid, "/fd");
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(fds.c_str()), ::closedir);
  if (!dir) return false;
  while (const dirent* e = ::readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    if (read_link(str_cat(fds, '/', e->d_name)) == link) return true;
  }
  return false;
}

// The executable's path if it names a file that still exists: not "(deleted)", not memfd.
std::optional<std::string> usable_exe(const std::string& proc, pid_t pid, std::string& why) {
  auto exe = read_link(str_cat(proc, '/', pid, "/exe"));
  if (!exe) {
    why = str_cat("cannot read the executable of process ", pid);
    return std::nullopt;
  }
  if (exe->ends_with(" (deleted)") || exe->starts_with("/memfd:") || !exe->starts_with('/')) {
    why = str_cat("process ", pid, " runs a deleted or anonymous executable (", *exe, ')');
    return std::nullopt;
  }
  return exe;
}

// ppid from /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and ')'.
std::optional<std::pair<pid_t, std::string>> parent_and_comm(const std::string& proc, pid_t pid) {
  const auto stat = read_small(str_cat(proc, '/', pid, "/stat"), 4096);
  if (!stat) return std::nullopt;
  const auto open = stat->find('('), close = stat->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  const std::string comm = stat->substr(open + 1, close - open - 1);
  int ppid = 0;
  char state = 0;
  if (std::sscanf(stat->c_str() + close + 1, " %c %d", &state, &ppid) != 2) return std::nullopt;
  return std::pair{static_cast<pid_t>(ppid), comm};
}

}  // namespace

std::optional<std::string> peer_identity::hash_of(pid_t pid, std::string& why) {
  const int fd = ::open(str_cat(proc_, '/', pid, "/exe").c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    why = str_cat("cannot open the executable of process ", pid);
    return std::nullopt;
  }
  // Fail closed before reading a byte: what is not a regular file, or is larger than any real
  // program (a sparse file costs its maker nothing), gets no identity.
  if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > limits_.max_bytes) {
    ::close(fd);
    why = S_ISREG(st.st_mode)
              ? str_cat("the executable of process ", pid, " has ", st.st_size,
                        " bytes, more than the ", limits_.max_bytes, " the relay hashes")
              : str_cat("the executable of process ", pid, " is not a regular file");
    return std::nullopt;
  }
  const auto key = std::tuple{
      static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
      static_cast<std::int64_t>(st.st_size),
      static_cast<std::int64_t>(st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec),
      static_cast<std::int64_t>(st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec)};
  if (auto it = hashes_.find(key); it != hashes_.end()) {
    ::close(fd);
    return it->second;
  }
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  std::vector<char> buf(64 * 1024);
  const auto deadline = std::chrono::steady_clock::now() + limits_.max_time;
  std::uint64_t total = 0;
  while (ok) {
    // Checked between reads, each at most 64 KiB: a stop or a slow file waits on one read.
    const bool stopping = abandon_ && abandon_->load(std::memory_order_relaxed);
    if (stopping || std::chrono::steady_clock::now() > deadline) {
      ::close(fd);
      why = stopping ? std::string("the relay is stopping")
                     : str_cat("hashing the executable of process ", pid, " took longer than ",
                               limits_.max_time.count(), " ms");
      return std::nullopt;
    }
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    total += static_cast<std::uint64_t>(n);
    // The file grew while it was read (it cannot while it runs: ETXTBSY): still bounded.
    if (total > limits_.max_bytes) ok = false;
    ok = ok && EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(n)) == 1;
  }
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!ok || EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) {
    why = str_cat("cannot hash the executable of process ", pid);
    return std::nullopt;
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(digits[md[i] >> 4]);
    hex.push_back(digits[md[i] & 0xF]);
  }
  if (hashes_.size() >= 256) hashes_.clear();
  hashes_.emplace(key, hex);
  return hex;
}

std::optional<net::peer_binary> peer_identity::find(const sockaddr_storage& peer,
                                                    const sockaddr_storage& local,
                                                    std::string& why) {
  const auto client = to_wire(peer), server = to_wire(local);
  if (!client || !server) {
    why = "not a TCP connection";
    return std::nullopt;
  }
  std::uint64_t inode = 0;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    if (const auto text = read_small(str_cat(proc_, '/', init_, table), 16 << 20))
      inode = socket_inode(*text, *client, *server);
    if (inode != 0) break;
  }
  if (inode == 0) {
    why = "the client's socket is gone (closed before the lookup)";
    return std::nullopt;
  }
  const std::string link = str_cat("socket:[", inode, ']');
  std::vector<pid_t> holders;
  for (pid_t p : descendants(proc_, init_, max_processes))
    if (holds_socket(proc_, p, link)) holders.push_back(p);
  if (holders.empty()) {
    why = "no process in the jail holds the socket (it exited before the lookup)";
    return std::nullopt;
  }
  std::optional<std::string> exe;
  for (pid_t h : holders) {
    auto e = usable_exe(proc_, h, why);
    if (!e) return std::nullopt;
    if (exe && *exe != *e) {
      why = str_cat("processes running ", *exe, " and ", *e, " share the socket");
      return std::nullopt;
    }
    exe = std::move(e);
  }
  const pid_t holder = holders.front();
  auto hash = hash_of(holder, why);
  // The process may have exec'd between the readlink and the open: then what was hashed is
  // not what was named.
  if (!hash || usable_exe(proc_, holder, why) != exe) {
    if (hash) why = str_cat("process ", holder, " changed its executable during the lookup");
    return std::nullopt;
  }
  net::peer_binary out{std::move(*exe), std::move(*hash), {}};
  pid_t p = holder;
  for (std::size_t i = 0; i < max_ancestors; ++i) {
    const auto pc = parent_and_comm(proc_, p);
    if (!pc || pc->first == init_ || pc->first <= 1) break;
    p = pc->first;
    const auto up = read_link(str_cat(proc_, '/', p, "/exe"));
    if (up) {
      out.ancestors.push_back(*up);
    } else if (const auto cc = parent_and_comm(proc_, p)) {
      out.ancestors.push_back(str_cat('[', cc->second, ']'));
    }
  }
  return out;
}

}  // namespace airlock::launcher
