#include "launcher/terminal.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace airlock::launcher {
namespace {

using core::str_cat;

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool caller_has_terminal() noexcept {
  return ::isatty(STDIN_FILENO) || ::isatty(STDOUT_FILENO) || ::isatty(STDERR_FILENO);
}

bool caller_has_controlling_terminal() noexcept {
  // /dev/tty opens the controlling terminal, or fails with ENXIO without one (tty(4)).
  const int fd = ::open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errno != ENXIO;  // anything else: assume there is one (fail closed)
  ::close(fd);
  return true;
}

bool leave_caller_session(bool new_session) {
  if (new_session) return ::setsid() >= 0 || step_failed("setsid");
  return ::setpgid(0, 0) == 0 || step_failed("setpgid");
}

bool open_jail_terminal(int& master, int& slave) {
  master = slave = -1;
  // The jail's own devpts (mounts.cpp); its ptmx is pts/ptmx, mode 0666.
  const int m = ::open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0) return step_failed("open(/dev/pts/ptmx)");
  int unlock = 0;
  if (::ioctl(m, TIOCSPTLCK, &unlock) != 0) {
    ::close(m);
    return step_failed("ioctl(TIOCSPTLCK)");
  }
  // TIOCGPTPEER (Linux 4.13) opens the peer without a path lookup; else by its number.
  int s = ::ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) {
    unsigned int n = 0;
    if (::ioctl(m, TIOCGPTN, &n) == 0)
      s = ::open(str_cat("/dev/pts/", n).c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  }
  if (s < 0) {
    ::close(m);
    return step_failed("open(pty slave)");
  }
  master = m;
  slave = s;
  return true;
}

bool make_controlling_terminal(int slave) {
  if (::ioctl(slave, TIOCSCTTY, 0) != 0) return step_failed("ioctl(TIOCSCTTY)");
  return true;
}

bool take_terminal(int slave) {
  if (slave < 0) return true;
  bool was_tty[3];
  for (int fd = 0; fd < 3; ++fd)
    was_tty[fd] = ::isatty(fd);
  for (int fd = 0; fd < 3; ++fd) {
    if (was_tty[fd] && ::dup2(slave, fd) < 0) return step_failed(str_cat("dup2(pty, ", fd, ')'));
  }
  return true;
}

void terminal_relay::start(int master) {
  master_ = master;
  (void)::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (term_fd_ < 0 && ::isatty(fd)) term_fd_ = fd;
  }
  for (int fd : {STDOUT_FILENO, STDERR_FILENO, STDIN_FILENO}) {
    if (output_ < 0 && ::isatty(fd)) output_ = fd;
  }
  if (term_fd_ < 0) return;
  // The pty starts as the caller's terminal is (erase character, modes, size); termios
  // requests on a master apply to its slave (pty(7)).
  termios mode{};
  if (::tcgetattr(term_fd_, &mode) == 0) {
    (void)::tcsetattr(master_, TCSANOW, &mode);
    saved_ = mode;
  }
  resize();
  // Input only from a terminal whose foreground we are: reading from the background would
  // stop the launcher (SIGTTIN), and so would changing the mode (SIGTTOU).
  if (::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) {
    input_ = STDIN_FILENO;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcgetattr(STDIN_FILENO, &saved_) == 0 && ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
      raw_ = true;
  }
}

void terminal_relay::add_poll(std::vector<pollfd>& fds) const {
  // After a hang-up (the last slave closed) the master stays readable with EIO: polling it
  // would spin until the jail is reaped.
  if (master_ < 0 || hung_up_) return;
  fds.push_back({master_, static_cast<short>(POLLIN | (pending_.empty() ? 0 : POLLOUT)), 0});
  if (input_ >= 0 && pending_.empty()) fds.push_back({input_, POLLIN, 0});
}

void terminal_relay::pump_output() {
  char buf[16384];
  for (int i = 0; i < 64; ++i) {  // bounded: a chatty command must not starve the signals
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN)) hung_up_ = true;  // EIO: no slave left
    if (n <= 0) return;
    if (output_ >= 0) (void)write_all(output_, buf, static_cast<std::size_t>(n));
  }
}

void terminal_relay::handle(const std::vector<pollfd>& fds) {
  if (master_ < 0) return;
  for (const auto& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == master_) {
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) pump_output();
      if ((p.revents & POLLOUT) && !pending_.empty()) {
        const ssize_t n = ::write(master_, pending_.data(), pending_.size());
        if (n > 0) pending_.erase(0, static_cast<std::size_t>(n));
      }
    } else if (p.fd == input_) {
      char buf[4096];
      const ssize_t n = ::read(input_, buf, sizeof buf);
      termios pty{};
      const bool stops = raw_ && ::tcgetattr(master_, &pty) == 0 && (pty.c_lflag & ISIG) &&
                         pty.c_cc[VSUSP] != _POSIX_VDISABLE;
      const void* z =
          stops && n > 0 ? std::memchr(buf, pty.c_cc[VSUSP], static_cast<std::size_t>(n)) : nullptr;
      if (z != nullptr) {
        // What came before and after ^Z goes to the pty (after goes in once resumed).
        const auto at = static_cast<std::size_t>(static_cast<const char*>(z) - buf);
        pending_.append(buf, at);
        pending_.append(buf + at + 1, static_cast<std::size_t>(n) - at - 1);
        suspend_requested_ = true;
      } else if (n > 0) {
        pending_.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        input_ = -1;  // the caller's terminal hung up
      }
    }
  }
}

void terminal_relay::resize() const noexcept {
  winsize ws{};
  if (master_ >= 0 && term_fd_ >= 0 && ::ioctl(term_fd_, TIOCGWINSZ, &ws) == 0)
    (void)::ioctl(master_, TIOCSWINSZ, &ws);
}

void terminal_relay::finish() {
  if (master_ >= 0) {
    pump_output();
    ::close(master_);
    master_ = -1;
  }
  restore();
}

void terminal_relay::suspend() noexcept {
  suspend_requested_ = false;
  if (master_ < 0) return;
  // TIOCGPGRP on a master answers for its slave (tty_ioctl(4)), in our PID namespace.
  const pid_t fg = ::tcgetpgrp(master_);
  if (fg > 0 && ::kill(-fg, SIGSTOP) == 0) stopped_pgrp_ = fg;
  if (raw_) {
    (void)::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    raw_ = false;
    raw_wanted_ = true;
  }
}

void terminal_relay::resume() noexcept {
  // Only in the foreground: from the background, tcsetattr would stop us (SIGTTOU).
  if (raw_wanted_ && input_ >= 0 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp()) {
    termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) raw_ = true;
    raw_wanted_ = false;
  }
  resize();
  if (stopped_pgrp_ > 0) (void)::kill(-stopped_pgrp_, SIGCONT);
  stopped_pgrp_ = -1;
}

void terminal_relay::restore() noexcept {
  if (raw_) {
    (void)::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    raw_ = false;
  }
  if (master_ >= 0) {
    ::close(master_);
    master_ = -1;
  }
}

}  // namespace airlock::launcher
