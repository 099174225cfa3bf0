#include "proxy/policy_watcher.hpp"

#include "core/log.hpp"
#include "policy/token.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace airlock::proxy {
namespace {

constexpr auto debounce_delay = std::chrono::milliseconds(150);

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
  auto folder = std::filesystem::absolute(path_).parent_path();
  constexpr std::uint32_t mask =
      IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB;
  if (::inotify_add_watch(fd, folder.c_str(), mask) < 0) {
    AIRLOCK_LOG(warn, "policy", "cannot watch ", folder.string(), ": ", std::strerror(errno),
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
          if (ev->mask & IN_Q_OVERFLOW || concerns_us(name)) relevant = true;
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
  // Debounce a burst of events, but never delay a change by more than a second in all.
  auto deadline = std::min(now + debounce_delay, first_pending_ + std::chrono::seconds(1));
  debounce_.expires_at(deadline);
  debounce_.async_wait(
      [this, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || ec || !watching_) return;
        check_pending_ = false;
        auto digest = content_digest();
        if (digest.empty() || digest == last_digest_) return;
        last_digest_ = digest;
        changed_();
      });
}

// SHA-256 of the file's bytes (never the bytes: the file may be a secret); empty when it cannot
// be read right now, e.g. in the middle of a replace, in which case a later event brings us
// back.
std::string policy_watcher::content_digest() const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return policy::sha256_hex(s.str());
}

}  // namespace airlock::proxy
