#include "launcher/trust.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/java_trust.hpp"
#include "launcher/step.hpp"
#include "launcher/trust_memo.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

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

// subject_hash, remembered in the trust cache (trust_memo.hpp): a warm start parses nothing.
// A memo exists only for bytes that parsed, so a hit needs no second check.
std::optional<std::string> remembered_subject_hash(const std::string& pem,
                                                   const std::optional<std::string>& cache) {
  const std::string key = str_cat("airlock-subject-hash-v1\n", pem);
  if (cache) {
    if (auto name = recall(*cache, key)) return name;
  }
  auto name = subject_hash(pem);
  if (name && cache) remember(*cache, key, *name);
  return name;
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

// Adds the JKS store for ca (java_trust.hpp) to out: bound from the cache, or, where no cache
// directory is safe to use, made in a scratch directory and copied. False where keytool failed.
bool add_java_store(const trust_spec& spec, const std::string& ca, const std::string& dir,
                    const std::optional<std::string>& cache, std::vector<staged_file>& out) {
  const std::string path = dir + "/truststore.jks";
  bool made_now = false;
  if (cache) {
    auto store = cached_java_store(spec, ca, *cache, made_now);
    if (!store) return false;
    AIRLOCK_LOG(debug, "launcher", "Java trust store ", *store, made_now ? " (made now)" : "");
    out.push_back({path, {}, {}, *store});
    return true;
  }
  scratch_dir scratch;
  if (!scratch.create()) return false;
  auto store = cached_java_store(spec, ca, scratch.path(), made_now);
  std::string bytes;
  if (!store || !read_file(*store, bytes)) return false;
  out.push_back({path, std::move(bytes), {}, {}});
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
  std::optional<std::string> cache;
  if (spec.airlock_ca) {
    if (!read_file(*spec.airlock_ca, ca))
      return step_failed(str_cat("open(", *spec.airlock_ca, ')'));
    cache = java_cache_dir();
    hash_name = remembered_subject_hash(ca, cache);
    if (!hash_name)
      return step_failed_msg(str_cat("--ca ", *spec.airlock_ca, ": not a PEM certificate"));
  }
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');
  if (!ca.empty()) bundle += str_cat("# Airlock CA (", *spec.airlock_ca, ")\n", ca);
  if (!bundle.empty() && bundle.back() != '\n') bundle.push_back('\n');

  if (spec.java && !ca.empty()) java_made = add_java_store(spec, ca, dir, cache, out);
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
