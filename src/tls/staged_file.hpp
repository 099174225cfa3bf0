#pragma once
// Writes a file so that readers see either the old content or the complete new one, never a
// torn or world-readable intermediate: the data goes to a fresh temporary file next to the
// target (created O_EXCL|O_NOFOLLOW with its final mode, so a private key is never readable by
// others, not even briefly), is fsync'ed, and is then renamed over the target. Staging and
// committing are separate steps so that several files (a CA key and its certificate) can all
// be written before any of them replaces its predecessor.
//
// Thread safety: one object per thread; distinct objects are independent.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace airlock::tls {

class staged_file {
 public:
  staged_file() = default;
  staged_file(staged_file&& other) noexcept;
  staged_file& operator=(staged_file&& other) noexcept;
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;
  // Removes the temporary file unless it was committed.
  ~staged_file();

  // Writes data to a new temporary file in target's directory with exactly `mode` (the umask
  // does not apply). On failure returns false and sets error (naming the file).
  bool stage(const std::filesystem::path& target, std::string_view data, mode_t mode,
             std::string& error);
  // Renames the temporary file onto the target and fsyncs the directory. With replace=false
  // an existing target (or a dangling symlink in its place) is never touched: the call fails
  // atomically (renameat2 RENAME_NOREPLACE, or link(2) where that is unsupported).
  bool commit(bool replace, std::string& error);

  const std::filesystem::path& target() const noexcept { return target_; }

 private:
  void discard() noexcept;

  std::filesystem::path target_;
  std::filesystem::path temp_;  // empty once committed or discarded
};

}  // namespace airlock::tls
