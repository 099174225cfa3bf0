#include "launcher/trust.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace airlock::launcher {
namespace {

using core::str_cat;

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

bool write_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return step_failed(str_cat("open(", path, ", O_CREAT)"));
  std::string_view rest = content;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return step_failed(str_cat("write(", path, ')'));
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) return step_failed(str_cat("close(", path, ')'));
  return true;
}

// The OpenSSL subject-name hash of the first certificate in pem, as c_rehash names files.
std::optional<std::string> subject_hash(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return std::nullopt;
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!cert) return std::nullopt;
  int ok = 0;
  const unsigned long h = X509_NAME_hash_ex(X509_get_subject_name(cert), nullptr, nullptr, &ok);
  X509_free(cert);
  if (!ok) return std::nullopt;
  char name[16];
  std::snprintf(name, sizeof name, "%08lx.0", h);
  return std::string(name);
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
  if (rc != 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool make_java_store(const trust_spec& spec, const std::string& dir, const std::string& ca_file) {
  const std::string store = dir + "/truststore.p12";
  const std::string system_store = "/etc/ssl/certs/java/cacerts";
  if (::access(system_store.c_str(), R_OK) == 0 &&
      !run_quietly({spec.keytool, "-importkeystore", "-noprompt", "-srckeystore", system_store,
                    "-srcstorepass", "changeit", "-destkeystore", store, "-deststoretype", "PKCS12",
                    "-deststorepass", "changeit"},
                   std::chrono::seconds(60)))
    return false;
  if (ca_file.empty()) return ::access(store.c_str(), R_OK) == 0;
  return run_quietly(
      {spec.keytool, "-importcert", "-noprompt", "-alias", "airlock-ca", "-file", ca_file,
       "-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit"},
      std::chrono::seconds(60));
}

}  // namespace

bool write_trust_dir(const trust_spec& spec, const std::string& dir, bool& java_made) {
  java_made = false;
  std::string system;
  if (!read_file(spec.system_bundle, system)) {
    AIRLOCK_LOG(warn, "launcher", "no system CA bundle at ", spec.system_bundle,
                "; the jail trusts only the Airlock CA");
  }
  std::string ca;
  std::optional<std::string> hash_name;
  if (spec.airlock_ca) {
    if (!read_file(*spec.airlock_ca, ca))
      return step_failed(str_cat("open(", *spec.airlock_ca, ')'));
    hash_name = subject_hash(ca);
    if (!hash_name)
      return step_failed_msg(str_cat("--ca ", *spec.airlock_ca, ": not a PEM certificate"));
  }
  std::string bundle = system;
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
  if (!ca.empty()) bundle += str_cat("# Airlock CA (", *spec.airlock_ca, ")\n", ca);
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');

  const std::string certs = dir + "/certs";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return step_failed(str_cat("mkdir(", dir, ')'));
  if (::mkdir(certs.c_str(), 0755) != 0 && errno != EEXIST)
    return step_failed(str_cat("mkdir(", certs, ')'));
  if (!write_file(dir + "/ca-bundle.crt", bundle)) return false;
  if (!write_file(certs + "/ca-bundle.crt", bundle)) return false;
  std::string ca_copy;
  if (!ca.empty()) {
    ca_copy = dir + "/airlock-ca.crt";
    if (!write_file(ca_copy, ca)) return false;
    if (!write_file(str_cat(certs, '/', *hash_name), ca)) return false;
  }
  if (spec.java) java_made = make_java_store(spec, dir, ca_copy);
  return true;
}

}  // namespace airlock::launcher
