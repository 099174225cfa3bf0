#include "launcher/trust.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

extern char** environ;

namespace airlock::launcher {
namespace {

using core::str_cat;

bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  out.clear();
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

bool write_file(const std::string& path, const std::string& content) {
  return write_whole_file(path, content, O_TRUNC);
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

// keytool's scratch directory; removed with everything in it when this goes.
class scratch_dir {
 public:
  bool create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = str_cat((tmp && *tmp == '/') ? tmp : "/tmp", "/airlock-run.XXXXXX");
    if (::mkdtemp(templ.data()) == nullptr) return step_failed(str_cat("mkdtemp(", templ, ')'));
    path_ = templ;
    return true;
  }
  ~scratch_dir() {
    if (path_.empty()) return;
    ::nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int type, FTW*) {
          return type == FTW_DP ? ::rmdir(p) : ::unlink(p);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Adds the Java store that keytool makes (from the JVM's cacerts and ca) to out; false
// where keytool failed.
bool add_java_store(const trust_spec& spec, const std::string& ca, const std::string& dir,
                    std::vector<staged_file>& out) {
  scratch_dir scratch;
  if (!scratch.create()) return false;
  std::string ca_file;
  if (!ca.empty()) {
    ca_file = scratch.path() + "/airlock-ca.crt";
    if (!write_file(ca_file, ca)) return false;
  }
  if (!make_java_store(spec, scratch.path(), ca_file)) return false;
  std::string bytes;
  if (!read_file(scratch.path() + "/truststore.p12", bytes)) return false;
  out.push_back({dir + "/truststore.p12", std::move(bytes), {}, {}});
  return true;
}

}  // namespace

bool build_trust_files(const trust_spec& spec, const std::string& dir,
                       std::vector<staged_file>& out, bool& java_made) {
  java_made = false;
  const std::string bundle_path = dir + "/ca-bundle.crt";
  if (!spec.airlock_ca) {
    // Nothing to add to the system's bundle: the jail binds the file itself (at its canonical
    // path: a symlink in it would resolve against the jail's staging root, not the host's).
    char canonical[PATH_MAX];
    struct stat st;
    if (::realpath(spec.system_bundle.c_str(), canonical) != nullptr &&
        ::stat(canonical, &st) == 0 && S_ISREG(st.st_mode) && ::access(canonical, R_OK) == 0) {
      out.push_back({bundle_path, {}, {}, canonical});
      out.push_back({dir + "/certs/ca-bundle.crt", {}, {}, canonical});
      if (spec.java) java_made = add_java_store(spec, {}, dir, out);
      return true;
    }
  }
  std::string bundle;
  if (!read_file(spec.system_bundle, bundle)) {
    bundle.clear();
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
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
  if (!ca.empty()) bundle += str_cat("# Airlock CA (", *spec.airlock_ca, ")\n", ca);
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');

  if (spec.java) java_made = add_java_store(spec, ca, dir, out);
  out.push_back({bundle_path, std::move(bundle), {}, {}});
  // The same bytes again for SSL_CERT_DIR: a hard link in the tmpfs, not a second copy.
  out.push_back({dir + "/certs/ca-bundle.crt", {}, bundle_path, {}});
  if (!ca.empty()) {
    const std::string ca_path = dir + "/airlock-ca.crt";
    out.push_back({ca_path, std::move(ca), {}, {}});
    out.push_back({str_cat(dir, "/certs/", *hash_name), {}, ca_path, {}});
  }
  return true;
}

}  // namespace airlock::launcher
