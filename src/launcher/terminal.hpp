#pragma once
// The command's terminal. The jail runs in a session of its own (setsid(2)), so the caller's
// terminal is not its controlling terminal: ioctl(TIOCSTI) on it would need CAP_SYS_ADMIN
// (tty_ioctl(4)), and seccomp refuses TIOCSTI and TIOCLINUX anyway (seccomp.hpp). A command
// that was given a terminal still gets one: the jail opens a pseudo-terminal in its own devpts
// and makes it the command's controlling terminal and its stdio where the caller's stdio was a
// terminal; the launcher copies bytes between the caller's terminal and the master, with the
// caller's terminal in raw mode so that the pty's own line discipline (^C, ^D, echo) applies
// inside, and passes window-size changes on. This is what bubblewrap's --new-session lacks
// (no terminal at all) and what `docker run -t` does.

#include <termios.h>

#include <cstddef>
#include <string>
#include <vector>

struct pollfd;

namespace airlock::launcher {

// True when any of the caller's stdin, stdout, stderr is a terminal.
bool caller_has_terminal() noexcept;
// True when the caller has a controlling terminal (whatever its stdio is).
bool caller_has_controlling_terminal() noexcept;

// In the jail's init: out of the caller's process group, so that kill(0, sig) inside reaches
// only the jail (a PID namespace does not filter process groups). With new_session, out of
// its session too, leaving the caller's controlling terminal behind. Without a controlling
// terminal to leave, a process group is enough, and cheaper: each session is a scheduling
// group of its own where the kernel has autogroups (sched(7)), which costs the start-up
// several milliseconds on a busy machine.
bool leave_caller_session(bool new_session);

// ---- in the jail ----------------------------------------------------------------------

// Opens a pseudo-terminal in the jail's devpts (/dev/pts/ptmx). master and slave are
// close-on-exec. False with the failure recorded.
bool open_jail_terminal(int& master, int& slave);

// In the jail's init, a session leader (leave_caller_session(true)): slave becomes the
// session's controlling terminal, with the init's process group (init and command) in its
// foreground. One session for both: each costs a scheduling group (see above). Terminal
// signals (^C) then reach the command directly; the init ignores its copy (SI_KERNEL).
bool make_controlling_terminal(int slave);

// In the command's process: slave in place of each of fds 0..2 that was a terminal.
// slave < 0: nothing.
bool take_terminal(int slave);

// ---- in the launcher ------------------------------------------------------------------

class terminal_relay {
 public:
  terminal_relay() = default;
  terminal_relay(const terminal_relay&) = delete;
  terminal_relay& operator=(const terminal_relay&) = delete;
  ~terminal_relay() { restore(); }

  // Takes ownership of master; copies the caller's window size to it and puts the caller's
  // terminal in raw mode when stdin is that terminal and this process is in its foreground.
  void start(int master);
  bool active() const noexcept { return master_ >= 0; }
  // The descriptors to poll (appended to fds); then handle() with the results.
  void add_poll(std::vector<pollfd>& fds) const;
  void handle(const std::vector<pollfd>& fds);
  // SIGWINCH: the caller's window size to the pty (the kernel signals the command).
  void resize() const noexcept;
  // After the jail ended: copies what the command wrote last, then restores the terminal.
  void finish();
  // Restores the caller's terminal mode (idempotent).
  void restore() noexcept;

  // Job control (^Z). The jail's process group is orphaned (no process of its session has a
  // parent in another session of the jail), so the kernel discards the SIGTSTP the pty's line
  // discipline sends it (POSIX "orphaned process group"; signal(7)). The launcher watches the
  // caller's input for the pty's suspend character instead (VSUSP, while the pty has ISIG: a
  // program in raw mode, such as an editor, gets the byte): it does not pass it on, and
  // suspend_requested() says so. suspend() then stops the pty's foreground process group
  // (SIGSTOP, which no orphaned group escapes) and restores the caller's terminal mode; the
  // launcher stops itself (SIGTSTP), and the caller's shell has its prompt. resume(), on
  // SIGCONT: raw mode again where the launcher is in the foreground (fg; after bg, at the next
  // SIGCONT), the window size, and SIGCONT to the group it stopped. Idempotent.
  bool suspend_requested() const noexcept { return suspend_requested_; }
  void suspend() noexcept;
  void resume() noexcept;

 private:
  void pump_output();
  int master_ = -1;
  int input_ = -1;    // the caller's stdin when it is a terminal we read; -1 otherwise
  int output_ = -1;   // where the command's terminal output goes (1 or 2)
  int term_fd_ = -1;  // the caller's terminal for window size and mode
  bool raw_ = false;
  bool raw_wanted_ = false;  // suspended from raw mode: raw again on resume in the foreground
  bool suspend_requested_ = false;
  int stopped_pgrp_ = -1;  // the jail's group suspend() stopped (our PID namespace's number)
  bool hung_up_ = false;   // the master read EIO: every slave is closed
  termios saved_{};
  std::string pending_;  // read from the caller, not yet accepted by the pty
};

}  // namespace airlock::launcher
