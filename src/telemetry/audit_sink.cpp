#include "telemetry/audit_sink.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace airlock::telemetry::audit_sink {
namespace {

// Writes all of `data`, retrying after EINTR and short writes; waits (bounded) when the fd is
// non-blocking and full. Returns the number of bytes written; sets `error` when that is less.
std::size_t write_all(int fd, std::string_view data, int& error) noexcept {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w > 0) {
      done += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      int r = ::poll(&p, 1, 1000);
      if (r > 0 || (r < 0 && errno == EINTR)) continue;
      error = r == 0 ? ETIMEDOUT : errno;
      return done;
    }
    error = w < 0 ? errno : EIO;
    return done;
  }
  return done;
}

}  // namespace

outcome write_lines(int fd, std::string_view lines, bool regular_file,
                    bool starts_mid_line) noexcept {
  // Where this write begins: the file's end, since it is O_APPEND (write(2): "the file offset is
  // positioned at the end of the file before each write").
  off_t start = regular_file ? ::lseek(fd, 0, SEEK_END) : -1;
  outcome out;
  const std::size_t n = write_all(fd, lines, out.error);
  out.consumed = n;
  if (out.error == 0) return out;
  // Bytes up to and including the last newline written are whole lines; what follows it is a
  // line cut in the middle.
  const std::size_t nl = lines.substr(0, n).rfind('\n');
  const std::size_t whole = nl == std::string_view::npos ? 0 : nl + 1;
  if (n == whole) {
    out.mid_line = n == 0 && starts_mid_line;
    return out;
  }
  struct stat st {};
  // Cut the partial line off, unless someone else appended meanwhile (the size is not ours to
  // reason about then): ftruncate(2) on our own file, which O_WRONLY allows.
  if (start >= 0 && ::fstat(fd, &st) == 0 && st.st_size == start + static_cast<off_t>(n) &&
      ::ftruncate(fd, start + static_cast<off_t>(whole)) == 0) {
    out.consumed = whole;
    out.mid_line = whole == 0 && starts_mid_line;
    return out;
  }
  // The part stays: the rest of the line is written first next time, which completes it.
  out.mid_line = true;
  return out;
}

}  // namespace airlock::telemetry::audit_sink
