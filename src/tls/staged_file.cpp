#include "tls/staged_file.hpp"

#include "core/str_cat.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace airlock::tls {
namespace {

std::string errno_text(int e) {
  return std::strerror(e);
}

bool fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

std::string random_suffix() {
  // Uniqueness, not secrecy, is what matters here: O_EXCL catches a collision anyway.
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t v = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof v) != 1) {
    v = (static_cast<std::uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (int shift = 60; shift >= 0; shift -= 4)
    out.push_back(hex[(v >> shift) & 0xf]);
  return out;
}

}  // namespace

staged_file::staged_file(staged_file&& other) noexcept
    : target_(std::move(other.target_)), temp_(std::exchange(other.temp_, {})) {}

staged_file& staged_file::operator=(staged_file&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    temp_ = std::exchange(other.temp_, {});
  }
  return *this;
}

staged_file::~staged_file() {
  discard();
}

void staged_file::discard() noexcept {
  if (!temp_.empty()) {
    ::unlink(temp_.c_str());
    temp_.clear();
  }
}

bool staged_file::stage(const std::filesystem::path& target, std::string_view data, mode_t mode,
                        std::string& error) {
  discard();
  target_ = target;
  std::filesystem::path temp = target;
  temp += core::str_cat(".tmp-", random_suffix());
  // O_EXCL|O_NOFOLLOW: never write through a file or symlink someone else planted.
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    error = core::str_cat("cannot create ", temp.string(), ": ", errno_text(errno));
    return false;
  }
  temp_ = temp;
  // The umask may have removed bits from `mode` (0644 under umask 077); set it exactly.
  if (::fchmod(fd, mode) != 0) {
    error = core::str_cat("cannot chmod ", temp.string(), ": ", errno_text(errno));
    ::close(fd);
    discard();
    return false;
  }
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = core::str_cat("cannot write ", temp.string(), ": ", errno_text(errno));
      ::close(fd);
      discard();
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  // Without the fsync a crash right after the rename can leave an empty file under the final
  // name on some file systems (the ext4 "zero-length file" problem).
  if (::fsync(fd) != 0) {
    error = core::str_cat("cannot fsync ", temp.string(), ": ", errno_text(errno));
    ::close(fd);
    discard();
    return false;
  }
  if (::close(fd) != 0) {
    error = core::str_cat("cannot close ", temp.string(), ": ", errno_text(errno));
    discard();
    return false;
  }
  return true;
}

bool staged_file::commit(bool replace, std::string& error) {
  if (temp_.empty()) {
    error = core::str_cat("nothing staged for ", target_.string());
    return false;
  }
  int rc = 0;
  if (replace) {
    rc = ::rename(temp_.c_str(), target_.c_str());
  } else {
    rc = ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
      // File systems without RENAME_NOREPLACE: link(2) also refuses an existing target.
      rc = ::link(temp_.c_str(), target_.c_str());
      if (rc == 0) ::unlink(temp_.c_str());
    }
  }
  if (rc != 0) {
    int e = errno;
    error = e == EEXIST ? core::str_cat(target_.string(), " already exists")
                        : core::str_cat("cannot rename ", temp_.string(), " to ", target_.string(),
                                        ": ", errno_text(e));
    discard();
    return false;
  }
  temp_.clear();
  if (!fsync_dir(target_.parent_path())) {
    error =
        core::str_cat("cannot fsync the directory of ", target_.string(), ": ", errno_text(errno));
    return false;
  }
  return true;
}

}  // namespace airlock::tls
