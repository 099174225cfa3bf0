#pragma once
// Caps the size of the files this process writes while in scope (setrlimit(2) RLIMIT_FSIZE),
// with SIGXFSZ ignored so that a write past the cap fails with EFBIG, after a short write, as
// one to a full disk fails with ENOSPC. A "full disk" for a unit test, without a mount.

#include <sys/resource.h>

#include <csignal>

namespace airlock::test {

class file_size_cap {
 public:
  explicit file_size_cap(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit capped{bytes, saved_.rlim_max};
    ok_ = ::setrlimit(RLIMIT_FSIZE, &capped) == 0;
  }
  ~file_size_cap() { lift(); }
  // Room again (the cap is gone), before the end of the scope.
  void lift() {
    if (lifted_) return;
    lifted_ = true;
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

  file_size_cap(const file_size_cap&) = delete;
  file_size_cap& operator=(const file_size_cap&) = delete;

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
  bool ok_ = false;
  bool lifted_ = false;
};

}  // namespace airlock::test
