#pragma once
// What sessions share. `shared_state` is process-wide and thread-safe; a `worker` is one
// thread with its own io_context, acceptor and upstream pool, so the hot path of a session
// (which never leaves its worker) takes no lock.

#include "filters/pipeline.hpp"
#include "net/address_guard.hpp"
#include "policy/snapshot.hpp"
#include "proxy/client_limiter.hpp"
#include "proxy/connection_pool.hpp"
#include "proxy/interception.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace airlock::telemetry {
class audit_log;
class metrics;
}  // namespace airlock::telemetry

namespace airlock::proxy {

// The policy in force: the snapshot with its filters (built once per load by
// filters::pipeline::build, bound to the lasting rate-limit state) and the TLS interception
// built from its `tls` section, swapped as one so an exchange never sees a snapshot with another
// snapshot's filters or CA. Built by server::build_active.
struct active_policy {
  std::shared_ptr<const filters::pipeline> pipeline;  // never null
  // TLS interception (CA, leaf cache, contexts); null when the policy names no CA.
  std::shared_ptr<const interception> tls;

  const policy::snapshot& snapshot() const noexcept { return pipeline->snapshot(); }
};

struct shared_state {
  // A reload stores a new active policy; each exchange loads it once, at its start, and keeps
  // it to its end (the inner requests of a tunnel and relay sessions too).
  std::atomic<std::shared_ptr<const active_policy>> active;
  // Refuses the proxy's own listening endpoints as upstreams; set once the listeners are bound,
  // before any session runs.
  std::unique_ptr<const net::address_guard> own_guard;
  telemetry::audit_log* audit = nullptr;  // may be null (tests)
  telemetry::metrics* metrics = nullptr;  // may be null (tests)
  client_limiter limiter;
  std::atomic<bool> draining{false};

  std::shared_ptr<const active_policy> current_active() const { return active.load(); }
  // The audit log cannot be written and the policy says `audit.on_failure: deny`: a new
  // exchange is refused (audit_unavailable). An atomic read the audit writer keeps, no I/O.
  bool audit_refuses(const policy::snapshot& snap) const noexcept;
  // The snapshot alone (shares ownership with its active policy).
  std::shared_ptr<const policy::snapshot> current() const {
    return active.load()->pipeline->snapshot_ptr();
  }
};

// A live session as the worker sees it, so shutdown can close idle connections at once and
// everything else once the drain time is up.
struct session_entry {
  boost::asio::ip::tcp::socket* client = nullptr;
  boost::asio::ip::tcp::socket* upstream = nullptr;  // set while an upstream is attached
  bool idle = true;                                  // waiting for the next request head
  // While a tunnel is open: the agent it belongs to, so the kill switch can cut it; and
  // whether it was cut.
  std::string tunnel_agent;
  bool cut = false;
};

class worker;

// A relay buffer lent by a worker; goes back to the worker's spares when released. Buffers are
// not zeroed (they are always written before read) and are reused, so relaying a body costs
// no allocation and no page faults once a worker is warm.
class buffer_lease {
 public:
  static constexpr std::size_t size_bytes = 64 * 1024;
  buffer_lease(worker& w, std::unique_ptr<char[]> p) : worker_(&w), data_(std::move(p)) {}
  buffer_lease(buffer_lease&&) = default;
  ~buffer_lease();
  char* data() noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_bytes; }

 private:
  worker* worker_;
  std::unique_ptr<char[]> data_;
};

// The worker's io_context, able to destroy its pending handlers before it is destroyed itself.
class worker_context : public boost::asio::io_context {
 public:
  using boost::asio::io_context::io_context;
  // Shuts its services down, which destroys every handler not yet run
  // (execution_context::shutdown; the destructor's own call then finds nothing left). Sockets
  // and timers of the context may still be destroyed after: Asio allows it.
  void destroy_pending() { shutdown(); }
};

class worker {
 public:
  explicit worker(shared_state& shared) : shared_(shared) {}
  // A session still suspended when the worker goes (it had not unwound by shutdown's deadline,
  // say behind a busy worker) is a coroutine frame among the context's pending handlers; its
  // destructors take it off sessions_, give its buffers back and write its audit record. So
  // the handlers go first, while everything they touch is there (it was a heap-use-after-free
  // when the list went first).
  // Then the acceptor, which belongs to ioc_ (declared, and so destroyed, after it would be).
  ~worker() {
    ioc_.destroy_pending();
    acceptor.reset();
  }
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  boost::asio::io_context& context() noexcept { return ioc_; }
  shared_state& shared() noexcept { return shared_; }
  connection_pool& pool() noexcept { return pool_; }
  tls_connection_pool& tls_pool() noexcept { return tls_pool_; }

  std::list<session_entry>::iterator add_session(boost::asio::ip::tcp::socket* client) {
    session_entry e;
    e.client = client;
    return sessions_.insert(sessions_.end(), std::move(e));
  }
  void remove_session(std::list<session_entry>::iterator it) { sessions_.erase(it); }

  // Called on the worker's thread: close idle sessions (all when `all`).
  void close_sessions(bool all);
  // Called on the worker's thread: closes the open tunnels of `agent` (the kill switch), both
  // sides. Returns how many.
  std::size_t cut_tunnels(std::string_view agent);
  std::size_t session_count() const noexcept { return sessions_.size(); }

  // Stops the timer floor too, so that run() can return once the sessions are gone.
  void release_work() {
    work_.reset();
    floor_.cancel();
  }

  // Keeps one timer of the worker's pending at all times, due within timer_floor_period (on the
  // worker's thread, or before it runs). Asio's reactor reprograms its timerfd
  // (timerfd_settime(2), a system call) whenever a new timer becomes the earliest; a session's
  // read timeouts (seconds) are then never the earliest, so arming and cancelling them per
  // request costs no system call (it was 2 of the 10 per small request).
  void keep_timer_floor();
  static constexpr std::chrono::milliseconds timer_floor_period{500};

  buffer_lease borrow_buffer() {
    if (spare_buffers_.empty())
      return buffer_lease(*this, std::unique_ptr<char[]>(new char[buffer_lease::size_bytes]));
    auto p = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
    return buffer_lease(*this, std::move(p));
  }
  void return_buffer(std::unique_ptr<char[]> p) {
    // Keep enough spares for the usual concurrency; let bursts' extra buffers go.
    if (p && spare_buffers_.size() < 128) spare_buffers_.push_back(std::move(p));
  }

  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  std::thread thread;

 private:
  // Declared before ioc_, so that they outlive it too: a handler destroyed with the context
  // itself (not by destroy_pending) may still take its session off the list or return a buffer.
  std::list<session_entry> sessions_;
  std::vector<std::unique_ptr<char[]>> spare_buffers_;
  worker_context ioc_{1};
  // Keeps run() going while the acceptor is closed during a drain, so posted shutdown steps
  // still execute; released when the worker is stopped.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      ioc_.get_executor()};
  boost::asio::steady_timer floor_{ioc_};
  shared_state& shared_;
  connection_pool pool_;
  // A TLS connection holds about 80 KiB (OpenSSL's and Asio's record buffers): fewer are kept
  // than plain ones, enough for the tunnels one origin usually has open at once.
  tls_connection_pool tls_pool_{
      {.max_per_key = 64, .max_total = 128, .max_idle = std::chrono::milliseconds(15'000)}};
};

inline buffer_lease::~buffer_lease() {
  if (data_) worker_->return_buffer(std::move(data_));
}

}  // namespace airlock::proxy
