#include "proxy/policy_watcher.hpp"

#include "core/log.hpp"

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
  inotify_.async_read_some(boost::asio::buffer(events_),
                           [this](const boost::system::error_code& ec, std::size_t) {
                             if (ec || !watching_) return;
                             // Any change in the folder may be ours (a rename of `..data`
                             // changes what the path resolves to): let the digest decide.
                             schedule_check();
                             read_events();
                           });
}

void policy_watcher::schedule_check() {
  debounce_.expires_after(debounce_delay);
  debounce_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !watching_) return;
    auto digest = content_digest();
    if (digest.empty() || digest == last_digest_) return;
    last_digest_ = digest;
    changed_();
  });
}

// The file's bytes (a policy is small); empty when it cannot be read right now, e.g. in the
// middle of a replace, in which case a later event brings us back.
std::string policy_watcher::content_digest() const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  auto bytes = s.str();
  return bytes.empty() ? std::string(1, '\0') : bytes;
}

}  // namespace airlock::proxy
