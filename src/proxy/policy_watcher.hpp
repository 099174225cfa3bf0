#pragma once
// Watches the policy file and calls back when its content changed. It watches the file's
// folder (inotify), not the file, because editors replace files by write-and-rename and
// Kubernetes swaps a ConfigMap by renaming a `..data` symlink: either way the inode we would
// have watched is gone. Only events naming the file, `..data` or the first step of the
// file's symlink target count (so a busy audit log in the same folder cannot starve it), and
// only those that end a change (a close after writing, a rename, a new symlink; never a
// write(2) on its own, which may be half of the file). They are debounced, at most one second
// in all; then the file is read twice, a moment apart, and the callback runs only when both
// reads agree and differ from the last bytes seen. A file that is not a regular file is never
// opened in a way that could block, and at most 16 MiB of it is read.
//
// Thread safety: runs on the io_context it is given; the callback is called there.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::proxy {

class policy_watcher {
 public:
  // Returns without watching (and logs why) when inotify is unavailable.
  policy_watcher(boost::asio::io_context& ioc, std::string path, std::function<void()> changed);
  ~policy_watcher();
  policy_watcher(const policy_watcher&) = delete;
  policy_watcher& operator=(const policy_watcher&) = delete;

  void stop();
  bool watching() const noexcept { return watching_; }

 private:
  void read_events();
  void schedule_check();
  void first_read();
  void confirm_read();
  bool concerns_us(std::string_view name) const;
  std::string content_digest() const;

  std::string path_;
  std::filesystem::path folder_;
  std::function<void()> changed_;
  boost::asio::posix::stream_descriptor inotify_;
  boost::asio::steady_timer debounce_;
  alignas(8) std::array<char, 8192> events_{};
  std::chrono::steady_clock::time_point first_pending_{};  // first event not yet checked
  bool check_pending_ = false;
  std::string last_digest_;
  std::string candidate_;            // read once, to be read again before it counts (confirm_read)
  mutable std::uint64_t reads_ = 0;  // makes each "being written" digest unlike any other
  bool watching_ = false;
  // Handlers hold it weakly: one already queued when the watcher is destroyed (a reload that
  // stops watching a file, from inside another watcher's callback) finds it gone and touches
  // nothing. Everything runs on the io_context's one thread.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace airlock::proxy
