#include "launcher/trust_memo.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace airlock::launcher {
namespace {

using core::str_cat;

constexpr std::string_view memo_prefix = "memo-";
constexpr std::size_t max_memo_bytes = 1 << 20;  // a CA certificate and a name; never more

// FNV-1a, 64 bits: a file name, not a check (the key is compared whole).
std::string memo_name(std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return str_cat(memo_prefix, hex);
}

bool read_small_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            static_cast<std::size_t>(st.st_size) <= max_memo_bytes;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ok = got == out.size();
  }
  ::close(fd);
  return ok;
}

// Keeps the newest `keep` memos, and always `just_written`.
void prune_memos(const std::string& dir, const std::string& just_written, std::size_t keep) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::int64_t, std::string>> memos;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (!n.starts_with(memo_prefix) || n.size() != memo_prefix.size() + 16) continue;
    struct stat st;
    const std::string path = str_cat(dir, '/', n);
    if (path != just_written && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      memos.emplace_back(
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, path);
  }
  ::closedir(d);
  const std::size_t others = keep > 0 ? keep - 1 : 0;
  if (memos.size() <= others) return;
  std::sort(memos.begin(), memos.end(), std::greater<>());
  for (std::size_t i = others; i < memos.size(); ++i)
    ::unlink(memos[i].second.c_str());
}

}  // namespace

std::optional<std::string> recall(const std::string& dir, std::string_view key) {
  std::string bytes;
  if (!read_small_file(str_cat(dir, '/', memo_name(key)), bytes)) return std::nullopt;
  const auto nl = bytes.find('\n');
  if (nl == std::string::npos || std::string_view(bytes).substr(nl + 1) != key) return std::nullopt;
  bytes.resize(nl);
  return bytes;
}

void remember(const std::string& dir, std::string_view key, std::string_view value,
              std::size_t keep) {
  if (value.find('\n') != std::string_view::npos) return;
  const std::string path = str_cat(dir, '/', memo_name(key));
  const std::string tmp = str_cat(path, ".tmp.", ::getpid());
  ::unlink(tmp.c_str());
  if (!write_whole_file(tmp, str_cat(value, '\n', key), O_EXCL) ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return;
  }
  prune_memos(dir, path, keep);
}

}  // namespace airlock::launcher
