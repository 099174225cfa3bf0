#include "proxy/policy_watcher.hpp"

#include "core/log.hpp"
#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "policy/token.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace airlock::proxy {
namespace {

constexpr auto debounce_delay = std::chrono::milliseconds(150);
// A change counts once two reads this far apart agree: a writer still at work (it paused
// mid-file, or an event came from elsewhere while it writes) gives bytes that differ.
constexpr auto settle_delay = std::chrono::milliseconds(150);
// As the loader (policy/loader.cpp): the bytes of a larger file are not kept, its size and time
// stand for them, and the reload then refuses it.
constexpr std::size_t max_hashed_bytes = 16u << 20;

// Whether a file called `name` in `folder` is a symbolic link (lstat(2), not followed).
bool is_symlink(const std::filesystem::path& folder, std::string_view name) {
  std::error_code ec;
  return std::filesystem::is_symlink(folder / std::string(name), ec);
}

}  // namespace

policy_watcher::policy_watcher(boost::asio::io_context& ioc, std::string path,
                               std::function<void()> changed)
    : path_(std::move(path)), changed_(std::move(changed)), inotify_(ioc), debounce_(ioc) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    AIRLOCK_LOG(warn, "policy", "file watch unavailable (inotify_init1: ", std::strerror(errno),
                "); reload with SIGHUP or POST /reload");
    return;
  }
  inotify_.assign(fd);
  folder_ = std::filesystem::absolute(path_).parent_path();
  // Events that end a change, never one in the middle of it (inotify(7)): a file written in
  // place is closed (IN_CLOSE_WRITE), a replacement renamed in (IN_MOVED_TO, also Kubernetes'
  // `..data`), a symlink made anew (IN_CREATE, kept only for links: a regular file is empty
  // when created). Not IN_MODIFY: it comes with every write(2), so a writer that pauses mid-file
  // would have its first part loaded.
  constexpr std::uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE;
  if (::inotify_add_watch(fd, folder_.c_str(), mask) < 0) {
    AIRLOCK_LOG(warn, "policy", "cannot watch ", folder_.string(), ": ", std::strerror(errno),
                "; reload with SIGHUP or POST /reload");
    return;
  }
  last_digest_ = content_digest();
  watching_ = true;
  read_events();
}

policy_watcher::~policy_watcher() {
  stop();
}

void policy_watcher::stop() {
  watching_ = false;
  boost::system::error_code ignored;
  debounce_.cancel();
  inotify_.close(ignored);
}

void policy_watcher::read_events() {
  inotify_.async_read_some(
      boost::asio::buffer(events_), [this, alive = std::weak_ptr<char>(alive_)](
                                        const boost::system::error_code& ec, std::size_t n) {
        if (alive.expired() || ec || !watching_) return;
        bool relevant = false;
        for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(events_.data() + off);
          std::string_view name = ev->len ? std::string_view(ev->name) : std::string_view();
          const bool created_file = (ev->mask & IN_CREATE) && !is_symlink(folder_, name);
          if (ev->mask & IN_Q_OVERFLOW || (concerns_us(name) && !created_file)) relevant = true;
          off += sizeof(inotify_event) + ev->len;
        }
        if (relevant) schedule_check();
        read_events();
      });
}

// The policy's own name, `..data` (Kubernetes swaps it), or the first step of where the
// path's symlink points (e.g. "..data/policy.yaml" -> "..data", "v2/policy.yaml" -> "v2").
bool policy_watcher::concerns_us(std::string_view name) const {
  if (name.empty()) return false;
  std::filesystem::path p(path_);
  if (name == p.filename().string() || name == "..data") return true;
  std::error_code ec;
  auto target = std::filesystem::read_symlink(p, ec);
  if (!ec && !target.empty() && target.is_relative() && name == target.begin()->string())
    return true;
  return false;
}

void policy_watcher::schedule_check() {
  auto now = std::chrono::steady_clock::now();
  if (!check_pending_) {
    check_pending_ = true;
    first_pending_ = now;
  }
  candidate_.clear();  // a new event: whatever was being confirmed starts over
  // Debounce a burst of events, but never delay a change by more than a second in all.
  auto deadline = std::min(now + debounce_delay, first_pending_ + std::chrono::seconds(1));
  debounce_.expires_at(deadline);
  debounce_.async_wait(
      [this, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || ec || !watching_) return;
        check_pending_ = false;
        first_read();
      });
}

// The first of the two reads: when the bytes differ from the last ones loaded, read again a
// little later (confirm_read) and call back only if they still agree.
void policy_watcher::first_read() {
  auto digest = content_digest();
  if (digest.empty() || digest == last_digest_) return;
  candidate_ = std::move(digest);
  debounce_.expires_after(settle_delay);
  debounce_.async_wait(
      [this, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || ec || !watching_) return;
        confirm_read();
      });
}

void policy_watcher::confirm_read() {
  auto digest = content_digest();
  if (digest.empty()) return;  // gone (mid-replace): its rename brings us back
  if (digest != candidate_) {
    // Still being written: look again, as if a new event had come.
    if (digest != last_digest_) schedule_check();
    return;
  }
  candidate_.clear();
  last_digest_ = std::move(digest);
  changed_();
}

// SHA-256 of the file's bytes (never the bytes: the file may be a secret); empty when it cannot
// be opened right now, e.g. in the middle of a replace, in which case a later event brings us
// back. Opened without blocking (a FIFO put in its place would stop the main thread in open(2))
// and read up to a cap (a link to /dev/zero would never end): core/regular_file.hpp. A file
// that is not a regular one or is too large has a digest of its own, so it counts as a change
// and the reload says what is wrong with it; one written to while read, a digest that matches
// nothing, so it is never taken as stable.
std::string policy_watcher::content_digest() const {
  const auto read = core::read_regular_file(path_, max_hashed_bytes);
  switch (read.problem) {
    case core::file_problem::none:
      if (read.changed_while_read) return core::str_cat("writing:", ++reads_);
      return policy::sha256_hex(read.bytes);
    case core::file_problem::cannot_open:
      return {};
    case core::file_problem::directory:
    case core::file_problem::not_regular:
      return core::str_cat("not-regular:", read.st.st_mode, ":", read.st.st_ino);
    case core::file_problem::too_large:
      return core::str_cat("too-large:", read.st.st_size, ":", read.st.st_mtim.tv_sec, ".",
                           read.st.st_mtim.tv_nsec);
    case core::file_problem::read_failed:
      return core::str_cat("unreadable:", ++reads_);
  }
  return {};
}

}  // namespace airlock::proxy
