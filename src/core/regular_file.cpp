#include "core/regular_file.hpp"

#include "core/str_cat.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::core {

opened_file open_regular_file(const std::string& path) {
  opened_file out;
  out.fd.reset(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!out.fd || ::fstat(out.fd.get(), &out.st) != 0) {
    out.problem = file_problem::cannot_open;
    out.error = std::strerror(errno);
    out.fd.reset();
    return out;
  }
  if (S_ISDIR(out.st.st_mode)) {
    out.problem = file_problem::directory;
    out.error = "is a directory";
  } else if (!S_ISREG(out.st.st_mode)) {
    out.problem = file_problem::not_regular;
    out.error = "is not a regular file";
  }
  if (out.problem != file_problem::none) out.fd.reset();
  return out;
}

file_read read_regular_file(const std::string& path, std::size_t max_bytes) {
  file_read out;
  opened_file f = open_regular_file(path);
  out.st = f.st;
  if (f.problem != file_problem::none) {
    out.problem = f.problem;
    out.error = std::move(f.error);
    return out;
  }
  // Reads up to the cap plus one byte, to tell "exactly the cap" from "larger": the size in
  // fstat is not trusted (procfs and sysfs files report 0, a file may grow while read).
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(f.fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.problem = file_problem::read_failed;
      out.error = std::strerror(errno);
      out.bytes.clear();
      return out;
    }
    if (n == 0) break;
    out.bytes.append(buf, static_cast<std::size_t>(n));
    if (out.bytes.size() > max_bytes) {
      out.problem = file_problem::too_large;
      out.error = str_cat("is larger than ", max_bytes, " bytes");
      out.bytes.clear();
      return out;
    }
  }
  struct stat after {};
  if (::fstat(f.fd.get(), &after) == 0)
    out.changed_while_read = after.st_size != out.st.st_size ||
                             after.st_mtim.tv_sec != out.st.st_mtim.tv_sec ||
                             after.st_mtim.tv_nsec != out.st.st_mtim.tv_nsec ||
                             static_cast<std::size_t>(after.st_size) != out.bytes.size();
  return out;
}

}  // namespace airlock::core
