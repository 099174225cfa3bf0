#pragma once
// Which program inside the jail opened a connection to the relay (issue 18, item 6): the
// relay asks this as it accepts, and passes the answer to the proxy in PROXY v2 TLVs
// (net/proxy_protocol.hpp) for rules with `binaries`.
//
// The lookup, all through /proc (proc(5)):
//   1. the client socket's inode: its line in /proc/INIT/net/tcp (or tcp6, a v4-mapped
//      client) whose local end is the peer the relay accepted and whose remote end is the
//      relay's listener; the jail's network namespace is the init's;
//   2. the jail's processes: the init's descendants through /proc/PID/task/TID/children
//      (bounded), the init itself excluded (it never holds an agent's socket);
//   3. the holders: processes with an fd whose link is "socket:[INODE]";
//   4. the holder's executable: readlink(/proc/PID/exe), which the kernel prints relative to
//      the jail's root (d_path stops at the root of the jail's mount tree), and its SHA-256
//      read through /proc/PID/exe itself, cached by (device, inode, size, mtime, ctime);
//   5. the ancestor chain: /proc/PID/stat's ppid up to the init.
//
// No identity (nullopt, with the reason) rather than a guess when: the socket is not found or
// its holder exited before the lookup (a race the agent can provoke); the holders run
// different executables (an inherited or passed socket); the executable is deleted
// ("... (deleted)") or anonymous (memfd: "/memfd:NAME (deleted)"); a /proc file cannot be read;
// the executable is not a regular file, or is larger than hash_limits::max_bytes (a jailed
// program can make its executable a sparse file of a PiB for free: the ELF loader reads only
// its head, the hash would read it all, on the relay's thread and the host's CPU); the hash
// takes longer than hash_limits::max_time, or the relay is stopping (`abandon`), so that
// neither a slow read nor a stop ever waits on a hash.
//
// What it cannot see: which code runs in the process. A script is its interpreter
// (/usr/bin/python3), LD_PRELOAD or a debugger changes the code but not the exe, and a process
// that wrote to its socket and then exec'd another program while keeping it open is that
// program by the time the relay looks. docs/threat-model.md says what that means.
//
// Thread safety: one instance per thread (the relay's loop owns one).

#include "net/peer_binary.hpp"

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace airlock::launcher {

// What one hash may cost. Real executables are far smaller than max_bytes (a statically
// linked toolchain binary is some tens of MiB; node about 100 MiB) and hash in well under a
// second; docs/launcher.md (per-binary identity) documents both. (At namespace scope: a
// nested struct's member initializers cannot serve its enclosing class's default arguments.)
struct identity_hash_limits {
  std::uint64_t max_bytes = 256ULL << 20;
  std::chrono::milliseconds max_time{5000};
};

class peer_identity {
 public:
  using hash_limits = identity_hash_limits;

  // init: the jail's init as the launcher sees it (the host's PID); proc: where procfs is
  // mounted (tests may point elsewhere only for failure paths); abandon: when it becomes true
  // (the relay is stopping), a hash under way gives up at its next read.
  explicit peer_identity(pid_t init, std::string proc = "/proc", hash_limits limits = {},
                         const std::atomic<bool>* abandon = nullptr)
      : init_(init), proc_(std::move(proc)), limits_(limits), abandon_(abandon) {}

  // The program that holds the client end of a connection the relay accepted: `peer` is the
  // accepted socket's peer address, `local` its local (the listener's) address.
  std::optional<net::peer_binary> find(const sockaddr_storage& peer, const sockaddr_storage& local,
                                       std::string& why);

  // Bounds, so that a jail with a fork bomb cannot make one lookup take long.
  static constexpr std::size_t max_processes = 4096;
  static constexpr std::size_t max_ancestors = 32;

 private:
  std::optional<std::string> hash_of(pid_t pid, std::string& why);

  pid_t init_;
  std::string proc_;
  hash_limits limits_;
  const std::atomic<bool>* abandon_;
  // (dev, ino, size, mtime ns, ctime ns) -> hex SHA-256; bounded (cleared when full).
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>,
           std::string>
      hashes_;
};

}  // namespace airlock::launcher
