#include "launcher/java_trust.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"
#include "launcher/trust_memo.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace airlock::launcher {
namespace {

using core::str_cat;

// A directory owned by us, not a link, writable by nobody else.
bool safe_dir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & 022) == 0;
}

// mkdir -p; only the last component is made private (0700), the parents as usual (0755).
bool make_private_dir(const std::string& path) {
  for (std::size_t pos = 1; pos <= path.size();) {
    auto next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string partial = path.substr(0, next);
    const mode_t mode = next == path.size() ? 0700 : 0755;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) return false;
    pos = next + 1;
  }
  return safe_dir(path);
}

// Runs argv with output discarded; true on exit status 0 within the time limit.
bool run_quietly(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  // The launcher blocks the signals it forwards; the helper must not inherit that.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return step_failed(str_cat("posix_spawn(", argv[0], ')'));
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return step_failed("waitpid(keytool)");
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return step_failed_msg(str_cat(argv[0], ": no answer within ", limit.count(), "s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  return step_failed_msg(str_cat(argv[0], ' ', argv[1], " failed (status ", status, ')'));
}

bool copy_file(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return step_failed(str_cat("open(", from, ')'));
  std::string bytes;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(in, buf, sizeof buf)) > 0)
    bytes.append(buf, static_cast<std::size_t>(n));
  ::close(in);
  if (n < 0) return step_failed(str_cat("read(", from, ')'));
  return write_whole_file(to, bytes, O_EXCL);
}

// Keeps the newest `keep` stores in dir: each new CA (a test run, a rotation) adds one.
void prune_stores(const std::string& dir, std::size_t keep) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::int64_t, std::string>> stores;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (!n.ends_with(".jks") || n.size() != 36) continue;  // 32 hex digits + ".jks"
    struct stat st;
    const std::string path = str_cat(dir, '/', n);
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      stores.emplace_back(static_cast<std::int64_t>(st.st_mtim.tv_sec), path);
  }
  ::closedir(d);
  if (stores.size() <= keep) return;
  std::sort(stores.begin(), stores.end(), std::greater<>());
  for (std::size_t i = keep; i < stores.size(); ++i)
    ::unlink(stores[i].second.c_str());
}

}  // namespace

std::optional<std::string> java_cache_dir() {
  std::vector<std::string> candidates;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    candidates.push_back(str_cat(x, "/airlock/java-trust"));
  if (const char* h = std::getenv("HOME"); h && *h == '/' && std::string_view(h) != "/")
    candidates.push_back(str_cat(h, "/.cache/airlock/java-trust"));
  candidates.push_back(str_cat("/var/tmp/airlock-java-trust-", ::geteuid()));
  for (const auto& c : candidates) {
    if (make_private_dir(c)) return c;
  }
  return std::nullopt;
}

namespace {

// What the store depends on: the CA, and cacerts and keytool by identity and age rather than
// content (hashing cacerts would cost a read per run, and ca-certificates-java replaces it: a
// new inode, a new mtime). nullopt when cacerts cannot be read.
std::optional<std::string> java_store_key(const trust_spec& spec, const std::string& ca_pem) {
  struct stat st;
  if (::stat(spec.java_cacerts.c_str(), &st) != 0) return std::nullopt;
  char kt[PATH_MAX];
  const std::string keytool = ::realpath(spec.keytool.c_str(), kt) ? kt : spec.keytool;
  return str_cat("airlock-java-trust-v1\n", ca_pem, '\n', spec.java_cacerts, '\n', st.st_dev, ' ',
                 st.st_ino, ' ', st.st_size, ' ', st.st_mtim.tv_sec, '.', st.st_mtim.tv_nsec, '\n',
                 keytool, '\n');
}

std::optional<std::string> store_name_of(const std::string& key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), md, &len, EVP_sha256(), nullptr) != 1) return std::nullopt;
  std::string name;
  for (unsigned int i = 0; i < 16 && i < len; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", md[i]);
    name += hex;
  }
  return name + ".jks";
}

}  // namespace

std::optional<std::string> java_store_name(const trust_spec& spec, const std::string& ca_pem) {
  const auto key = java_store_key(spec, ca_pem);
  return key ? store_name_of(*key) : std::nullopt;
}

std::optional<std::string> java_store_name(const trust_spec& spec, const std::string& ca_pem,
                                           const std::string& cache_dir) {
  const auto key = java_store_key(spec, ca_pem);
  if (!key) return std::nullopt;
  if (auto name = recall(cache_dir, *key)) return name;  // trust_memo.hpp: no OpenSSL
  auto name = store_name_of(*key);
  if (name) remember(cache_dir, *key, *name);
  return name;
}

std::optional<std::string> cached_java_store(const trust_spec& spec, const std::string& ca_pem,
                                             const std::string& cache_dir, bool& made_now) {
  made_now = false;
  auto name = java_store_name(spec, ca_pem, cache_dir);
  if (!name) {
    step_failed(str_cat("stat(", spec.java_cacerts, ')'));
    return std::nullopt;
  }
  const std::string store = str_cat(cache_dir, '/', *name);
  struct stat st;
  if (::lstat(store.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      st.st_size > 0)
    return store;
  // keytool adds the CA to a copy of cacerts (JKS, password "changeit" as Debian and the JDK
  // ship it); the JVM reads cacerts without a password, so nothing else changes for it.
  const std::string tmp = str_cat(cache_dir, '/', *name, ".tmp.", ::getpid());
  const std::string ca_file = tmp + ".crt";
  ::unlink(tmp.c_str());
  ::unlink(ca_file.c_str());
  bool ok = copy_file(spec.java_cacerts, tmp) && write_whole_file(ca_file, ca_pem, O_EXCL) &&
            run_quietly({spec.keytool, "-importcert", "-noprompt", "-alias", "airlock-ca", "-file",
                         ca_file, "-keystore", tmp, "-storepass", "changeit"},
                        std::chrono::seconds(60));
  ::unlink(ca_file.c_str());
  if (ok && ::rename(tmp.c_str(), store.c_str()) != 0)
    ok = step_failed(str_cat("rename(", store, ')'));
  if (!ok) {
    ::unlink(tmp.c_str());
    return std::nullopt;
  }
  made_now = true;
  prune_stores(cache_dir, 8);
  return store;
}

}  // namespace airlock::launcher
