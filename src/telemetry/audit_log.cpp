#include "telemetry/audit_log.hpp"

#include "core/log.hpp"
#include "telemetry/audit_event.hpp"
#include "telemetry/audit_format.hpp"
#include "telemetry/audit_sink.hpp"
#include "telemetry/event_hub.hpp"
#include "telemetry/ocsf_format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace airlock::telemetry {
namespace {

constexpr std::size_t flush_threshold = 64 * 1024;
// Beyond this much unwritten data (the sink is stuck or far too slow) new records are dropped
// and counted instead of growing memory without bound.
constexpr std::size_t max_pending = 16 * 1024 * 1024;
constexpr auto flush_interval = std::chrono::milliseconds(100);

int open_for_append(const std::string& path, std::string& error) {
  // O_APPEND: every write(2) lands at the end even when another process (or a rotated copy)
  // appends to the same file. O_CLOEXEC: the agent processes the launcher starts must not
  // inherit the audit trail.
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
  if (fd < 0) error = core::str_cat("cannot open audit log ", path, ": ", std::strerror(errno));
  return fd;
}

}  // namespace

struct audit_log::impl {
  enum class sink { off, out, file };

  sink kind = sink::off;
  std::string path;

  // Lock order: io_mu before mu. write() takes only mu, for an append.
  std::mutex io_mu;  // serialises writing out and swapping fd, so lines keep their order
  int fd = -1;       // guarded by io_mu
  // guarded by io_mu: lines not written out yet. While the sink fails they stay here and are
  // tried again at every flush (each 100 ms), so a full disk delays records instead of losing
  // them, until write() finds more than max_pending waiting.
  std::string spare;
  bool mid_line = false;  // guarded by io_mu: the sink ends with the start of spare's first line
  std::uint64_t dropped_when_failed = 0;  // guarded by io_mu: dropped, as the failure began

  // Cleared by the flusher when a write fails, set again once everything waiting was written;
  // read by every exchange (audit.on_failure: deny) without touching the sink.
  std::atomic<bool> writable{true};
  std::atomic<std::uint64_t> write_errors{0};
  std::atomic<std::size_t> backlog{0};  // spare's size, for write()'s bound

  std::mutex mu;
  std::condition_variable cv;
  std::string pending;  // guarded by mu
  bool wake = false;    // guarded by mu: pending reached flush_threshold
  bool stop = false;    // guarded by mu

  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<event_hub*> live{nullptr};  // GET /events (set_live_events)
  bool ocsf = false;                      // audit.format: ocsf (set at open)
  std::thread flusher;

  void run_flusher() {
    std::unique_lock lk(mu);
    while (!stop) {
      cv.wait_for(lk, flush_interval, [&] { return stop || wake; });
      wake = false;
      lk.unlock();
      flush();
      lk.lock();
    }
  }

  void flush() noexcept {
    std::lock_guard io(io_mu);
    flush_locked();
  }

  // Requires io_mu.
  void flush_locked() noexcept {
    {
      std::lock_guard lk(mu);
      if (spare.empty()) {
        pending.swap(spare);
      } else {
        try {
          spare.append(pending);  // behind what a failing sink still holds back
        } catch (...) {           // std::bad_alloc: these records are lost, and counted
          dropped.fetch_add(
              static_cast<std::uint64_t>(std::count(pending.begin(), pending.end(), '\n')),
              std::memory_order_relaxed);
        }
        pending.clear();
      }
    }
    if (spare.empty()) return;
    const auto r = audit_sink::write_lines(fd, spare, kind == sink::file, mid_line);
    spare.erase(0, r.consumed);
    mid_line = r.mid_line;
    backlog.store(spare.size(), std::memory_order_relaxed);
    if (r.error != 0)
      failed(r.error);
    else if (!writable.load(std::memory_order_relaxed))
      recovered();
    // A burst may have grown the buffer far beyond the usual size; give the memory back.
    if (spare.empty() && spare.capacity() > 4 * flush_threshold) std::string().swap(spare);
  }

  // One log line when writing starts to fail, not one per retry (Envoy: a degraded mode gets a
  // log line and a metric).
  void failed(int errno_value) noexcept {
    write_errors.fetch_add(1, std::memory_order_relaxed);
    if (!writable.exchange(false)) return;
    dropped_when_failed = dropped.load(std::memory_order_relaxed);
    try {
      AIRLOCK_LOG(error, "audit", "writing the audit log failed (", std::strerror(errno_value),
                  "); records wait in memory (up to 16 MiB) and are written when it works "
                  "again; under audit.on_failure: deny new requests are refused until then");
    } catch (...) {  // out of memory for the log line: the metrics still tell
    }
  }

  void recovered() noexcept {
    writable.store(true);
    try {
      AIRLOCK_LOG(info, "audit", "writing the audit log works again; ",
                  dropped.load(std::memory_order_relaxed) - dropped_when_failed,
                  " records were dropped meanwhile");
    } catch (...) {
    }
  }
};

std::unique_ptr<audit_log> audit_log::open(const std::string& path, std::string& error, bool ocsf) {
  auto p = std::make_unique<impl>();
  p->ocsf = ocsf;
  if (path == "off") {
    p->kind = impl::sink::off;
    return std::unique_ptr<audit_log>(new audit_log(std::move(p)));
  }
  if (path.empty()) {
    error = "audit log path is empty (use \"-\" for stdout or \"off\")";
    return nullptr;
  }
  if (path == "-") {
    p->kind = impl::sink::out;
    p->fd = STDOUT_FILENO;
  } else {
    p->kind = impl::sink::file;
    p->path = path;
    p->fd = open_for_append(path, error);
    if (p->fd < 0) return nullptr;
  }
  p->pending.reserve(flush_threshold + 4096);
  impl* raw = p.get();
  p->flusher = std::thread([raw] { raw->run_flusher(); });
  return std::unique_ptr<audit_log>(new audit_log(std::move(p)));
}

audit_log::audit_log(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

audit_log::~audit_log() {
  if (impl_->flusher.joinable()) {
    {
      std::lock_guard lk(impl_->mu);
      impl_->stop = true;
    }
    impl_->cv.notify_one();
    impl_->flusher.join();
  }
  if (impl_->kind == impl::sink::off) return;
  impl_->flush();
  // Still failing at exit: what waits is lost.
  const auto& left = impl_->spare;
  impl_->dropped.fetch_add(static_cast<std::uint64_t>(std::count(left.begin(), left.end(), '\n')),
                           std::memory_order_relaxed);
  if (impl_->kind == impl::sink::file && impl_->fd >= 0) ::close(impl_->fd);
}

namespace {
void append_line(std::string& out, const audit_record& r) {
  append_audit_line(out, r);
}
void append_line(std::string& out, const audit_event& e) {
  append_event_line(out, e);
}
}  // namespace

template <typename Record>
void audit_log::write_line(const Record& record) noexcept {
  event_hub* live = impl_->live.load(std::memory_order_acquire);
  if (live != nullptr && !live->has_subscribers()) live = nullptr;
  if (impl_->kind == impl::sink::off && live == nullptr) return;
  // Formatting, the expensive part, happens on the caller's thread without any lock; the
  // thread_local buffer keeps its capacity, so this allocates only for unusually long lines.
  thread_local std::string line;
  bool notify = false;
  try {
    line.clear();
    if (line.capacity() > 4 * flush_threshold) std::string().swap(line);
    // The live stream is always the JSON lines (the console reads them); the sink may be OCSF.
    if (live != nullptr || !impl_->ocsf) append_line(line, record);
    if (live != nullptr) live->publish(line);
    if (impl_->kind == impl::sink::off) return;
    if (impl_->ocsf) {
      line.clear();
      append_ocsf_line(line, record);
    }
    std::lock_guard lk(impl_->mu);
    const std::size_t waiting =
        impl_->pending.size() + impl_->backlog.load(std::memory_order_relaxed);
    if (impl_->stop || waiting + line.size() > max_pending) {
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    impl_->pending.append(line);
    impl_->accepted.fetch_add(1, std::memory_order_relaxed);
    if (impl_->pending.size() >= flush_threshold && !impl_->wake) {
      impl_->wake = true;
      notify = true;
    }
  } catch (...) {
    // std::bad_alloc while formatting or appending: the record is lost, not the process.
    impl_->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (notify) impl_->cv.notify_one();
}

void audit_log::write(const audit_record& record) noexcept {
  write_line(record);
}

void audit_log::write(const audit_event& event) noexcept {
  write_line(event);
}

void audit_log::set_live_events(event_hub* hub) noexcept {
  impl_->live.store(hub, std::memory_order_release);
}

void audit_log::flush() noexcept {
  if (impl_->kind != impl::sink::off) impl_->flush();
}

bool audit_log::reopen() noexcept {
  if (impl_->kind != impl::sink::file) return true;
  int fd = -1;
  try {
    std::string error;
    fd = open_for_append(impl_->path, error);
    if (fd < 0) AIRLOCK_LOG(warn, "audit", error, "; still writing to the previous file");
  } catch (...) {  // std::bad_alloc building the message
  }
  if (fd < 0) return false;
  int old;
  {
    std::lock_guard io(impl_->io_mu);
    impl_->flush_locked();  // what was written before the reopen belongs to the old file
    if (impl_->mid_line) {
      // The old file ends with part of a line it can no longer be cut back from; the rest of
      // that line would begin the new file unparsable. That record is lost.
      auto nl = impl_->spare.find('\n');
      impl_->spare.erase(0, nl == std::string::npos ? std::string::npos : nl + 1);
      impl_->mid_line = false;
      impl_->backlog.store(impl_->spare.size(), std::memory_order_relaxed);
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
    }
    old = impl_->fd;
    impl_->fd = fd;
    // Nothing waits to prove the new file writable: the next record will tell.
    if (impl_->spare.empty() && !impl_->writable.load()) impl_->recovered();
  }
  ::close(old);
  return true;
}

std::uint64_t audit_log::dropped_records() const noexcept {
  return impl_->dropped.load(std::memory_order_relaxed);
}

bool audit_log::writable() const noexcept {
  return impl_->writable.load(std::memory_order_relaxed);
}

std::uint64_t audit_log::write_errors() const noexcept {
  return impl_->write_errors.load(std::memory_order_relaxed);
}

std::uint64_t audit_log::written_records() const noexcept {
  return impl_->accepted.load(std::memory_order_relaxed);
}

}  // namespace airlock::telemetry
