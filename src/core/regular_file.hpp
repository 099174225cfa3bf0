#pragma once
// Opening and reading a file the policy names (the policy itself, an include, a secret file,
// a CA file or bundle) without letting the name do harm: the open never blocks (a FIFO's
// open(2) waits for a writer, see fifo(7); O_NONBLOCK returns at once), anything but a regular
// file is refused (a FIFO, socket or device such as /dev/zero would block or never end), and a
// read stops past a cap. The one helper the loader, the secret reader, the CA loader and the
// file watcher share.
//
// @par Thread Safety
// Free functions; nothing shared.

#include "core/unique_fd.hpp"

#include <sys/stat.h>

#include <cstddef>
#include <string>

namespace airlock::core {

enum class file_problem {
  none,
  cannot_open,  // open(2) or fstat(2) failed: `error` holds strerror
  directory,    // a folder
  not_regular,  // a FIFO, socket or device
  too_large,    // more than the cap
  read_failed,  // read(2) failed: `error` holds strerror
};

struct opened_file {
  unique_fd fd;
  struct stat st {};
  file_problem problem = file_problem::none;
  std::string error;  // why, without the path (the caller names it its own way)
};

// open(O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), fstat, regular files only. Reads from
// the descriptor are ordinary: O_NONBLOCK has no effect on a regular file.
opened_file open_regular_file(const std::string& path);

struct file_read {
  std::string bytes;  // the whole file (problem none)
  struct stat st {};
  file_problem problem = file_problem::none;
  std::string error;
  // The size or modification time differ between before and after the read: a writer was at
  // work, the bytes may be neither the old file nor the new one.
  bool changed_while_read = false;
};

// Reads a whole regular file of at most `max_bytes`.
file_read read_regular_file(const std::string& path, std::size_t max_bytes);

}  // namespace airlock::core
