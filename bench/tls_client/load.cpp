#include "load.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <memory>
#include <numeric>

namespace airlock::bench {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// After Connection: close the server closes at once; waiting longer means it did not.
constexpr auto close_wait = std::chrono::seconds(2);
// A run with this many errors is broken anyway: stop instead of spinning on them.
constexpr std::uint64_t max_errors = 1000;

// Tells the caller, as it happens, where the recorded window starts and ends, so that it can
// read the proxy's CPU time over exactly that window.
void mark(const char* what) {
  std::printf("TLS_MARK %s\n", what);
  std::fflush(stdout);
}

double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::uint32_t micros(steady::duration d) {
  return static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

asio::awaitable<void> sleep_for(steady::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(use_tuple);
}

// A connection's watchdog state: a busy slot past its deadline has its socket closed, which
// ends the pending operation with operation_aborted (reported as `timeout`).
struct slot {
  std::unique_ptr<tls_stream> stream;
  steady::time_point deadline = steady::time_point::max();

  void arm(steady::duration d) { deadline = steady::now() + d; }
  void disarm() { deadline = steady::time_point::max(); }
  void expire_if_late(steady::time_point now) {
    if (stream && now > deadline) {
      boost::system::error_code ec;
      stream->lowest_layer().close(ec);
      disarm();
    }
  }
};

// Reads until the server ends the connection (close_notify or EOF), as Connection: close
// promised (RFC 9112 section 9.6). True when it did within close_wait.
asio::awaitable<bool> await_server_close(slot& sl) {
  sl.arm(close_wait);
  char sink[512];
  for (;;) {
    auto [ec, n] = co_await sl.stream->async_read_some(asio::buffer(sink), use_tuple);
    if (ec) {
      sl.disarm();
      co_return ec != asio::error::operation_aborted;
    }
  }
}

// Sends close_notify and waits for the peer's, briefly; errors do not matter any more.
asio::awaitable<void> close_politely(slot& sl) {
  sl.arm(std::chrono::seconds(1));
  co_await sl.stream->async_shutdown(use_tuple);
  sl.disarm();
  boost::system::error_code ec;
  sl.stream->lowest_layer().close(ec);
}

class load_run {
 public:
  load_run(const options& o, ssl::context& ctx, const tcp::endpoint& to)
      : o_(o),
        ctx_(ctx),
        go_(ioc_, steady::time_point::max()),
        slots_(static_cast<std::size_t>(o.connections)) {
    spec_.connect_to = to;
    spec_.via_proxy = o.via_proxy;
    spec_.host = o.host;
    spec_.port = o.port;
    request_ = make_request(spec_, o.path, o.mode == run_mode::newconn);
  }

  load_result run() {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      asio::co_spawn(ioc_, worker(slots_[i]), asio::detached);
    asio::co_spawn(ioc_, watchdog(), asio::detached);
    asio::co_spawn(ioc_, driver(), asio::detached);
    ioc_.run();
    return std::move(r_);
  }

 private:
  enum class phase { setup, warmup, record, done };

  bool in_window(steady::time_point t) const { return t >= record_start_ && t < record_end_; }
  bool stopping() const { return phase_ == phase::done || r_.errors.total() >= max_errors; }

  // Counted in every phase: a request still pending when the window closes that then times
  // out is as much a failure as one inside it.
  void fail(failure f, const std::string& detail) { r_.errors.add(f, detail); }

  asio::awaitable<void> driver() {
    auto t0 = steady::now();
    if (o_.mode == run_mode::keepalive) {
      // Every connection is open before the clock starts: handshakes are newconn's business.
      while (ready_ < slots_.size() && !stopping())
        co_await sleep_for(std::chrono::milliseconds(1));
      r_.setup_seconds = std::chrono::duration<double>(steady::now() - t0).count();
      phase_ = phase::warmup;
      go_.cancel();
    }
    phase_ = phase::warmup;
    co_await sleep_for(
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o_.warmup)));
    double cpu0 = cpu_now();
    record_start_ = steady::now();
    phase_ = phase::record;
    mark("record");
    co_await sleep_for(
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o_.seconds)));
    record_end_ = steady::now();
    r_.cpu_seconds = cpu_now() - cpu0;
    r_.seconds = std::chrono::duration<double>(record_end_ - record_start_).count();
    phase_ = phase::done;
    mark("done");
    go_.cancel();
  }

  asio::awaitable<void> watchdog() {
    while (finished_ < slots_.size()) {
      co_await sleep_for(std::chrono::milliseconds(100));
      auto now = steady::now();
      for (auto& sl : slots_)
        sl.expire_if_late(now);
    }
  }

  asio::awaitable<void> worker(slot& sl) {
    if (o_.mode == run_mode::keepalive)
      co_await keepalive(sl);
    else
      co_await newconn(sl);
    ++finished_;
  }

  asio::awaitable<void> keepalive(slot& sl) {
    bool counted_ready = false;
    std::string detail, buffer;
    auto timeout =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o_.timeout));
    while (!stopping()) {
      sl.stream = std::make_unique<tls_stream>(ioc_, ctx_);
      buffer.clear();
      sl.arm(timeout);
      open_times times;
      auto f = co_await open_connection(*sl.stream, spec_, detail, &times);
      sl.disarm();
      if (!counted_ready) {
        counted_ready = true;
        ++ready_;
      }
      if (f != failure::none) {
        fail(f, detail);
        co_await sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (in_window(times.handshake_done)) ++r_.connections;
      if (phase_ == phase::setup) co_await go_.async_wait(use_tuple);
      bool reopen = false;
      while (!stopping() && !reopen) {
        auto start = steady::now();
        sl.arm(timeout);
        auto res = co_await exchange(*sl.stream, buffer, request_, o_.expect_body, detail);
        sl.disarm();
        auto end = steady::now();
        if (res.fail != failure::none) {
          fail(res.fail, detail);
          reopen = true;
          break;
        }
        if (in_window(end)) {
          ++r_.requests;
          r_.bytes += res.bytes;
          r_.latency_us.push_back(micros(end - start));
        }
        reopen = res.server_closes;
      }
      if (!reopen) co_await close_politely(sl);
    }
  }

  asio::awaitable<void> newconn(slot& sl) {
    std::string detail, buffer;
    auto timeout =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o_.timeout));
    while (!stopping()) {
      sl.stream = std::make_unique<tls_stream>(ioc_, ctx_);
      buffer.clear();
      open_times times;
      sl.arm(timeout);
      auto f = co_await open_connection(*sl.stream, spec_, detail, &times);
      if (f == failure::none) {
        auto res = co_await exchange(*sl.stream, buffer, request_, o_.expect_body, detail);
        sl.disarm();
        auto end = steady::now();
        if (res.fail == failure::none && !co_await await_server_close(sl)) {
          res.fail = failure::io;
          detail = "the server kept the connection open after Connection: close";
        }
        if (res.fail == failure::none && in_window(end)) {
          ++r_.requests;
          ++r_.connections;
          r_.bytes += res.bytes;
          r_.latency_us.push_back(micros(end - times.start));
          r_.handshake_us.push_back(micros(times.handshake_done - times.start));
        }
        f = res.fail;
      }
      sl.disarm();
      boost::system::error_code ec;
      sl.stream->lowest_layer().close(ec);
      if (f != failure::none) {
        fail(f, detail);
        co_await sleep_for(std::chrono::milliseconds(10));
      }
    }
  }

  const options& o_;
  ssl::context& ctx_;
  asio::io_context ioc_{1};
  endpoint_spec spec_;
  std::string request_;
  asio::steady_timer go_;  // keepalive: released when every connection is open
  std::vector<slot> slots_;
  phase phase_ = phase::setup;
  steady::time_point record_start_ = steady::time_point::max();
  steady::time_point record_end_ = steady::time_point::max();
  std::size_t ready_ = 0;
  std::size_t finished_ = 0;
  load_result r_;
};

asio::awaitable<void> handshakes(const options& o, ssl::context& ctx, const tcp::endpoint& to,
                                 slot& sl, handshake_result& r, bool& done) {
  auto timeout =
      std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o.timeout));
  auto ex = co_await asio::this_coro::executor;
  std::string detail, buffer;
  r.passes.resize(static_cast<std::size_t>(o.repeat));
  // Name by name, each `repeat` times in a row: the first connection to a name makes the
  // proxy mint, the next ones hit its cache, and the pairs are measured moments apart, so a
  // change of load on the machine hits both sides of a pair alike.
  for (const auto& name : o.names) {
    for (auto& p : r.passes) {
      endpoint_spec spec{to, o.via_proxy, name, o.port};
      sl.stream = std::make_unique<tls_stream>(ex, ctx);
      buffer.clear();
      open_times t;
      sl.arm(timeout);
      auto f = co_await open_connection(*sl.stream, spec, detail, &t);
      if (f == failure::none) {
        auto res = co_await exchange(*sl.stream, buffer, make_request(spec, o.path, true),
                                     o.expect_body, detail);
        auto end = steady::now();
        sl.disarm();
        if (res.fail == failure::none && !co_await await_server_close(sl)) {
          res.fail = failure::io;
          detail = "the server kept the connection open after Connection: close";
        }
        if (res.fail == failure::none) {
          p.tcp_us.push_back(micros(t.tcp_done - t.start));
          p.tunnel_us.push_back(micros(t.tunnel_done - t.tcp_done));
          p.handshake_us.push_back(micros(t.handshake_done - t.tunnel_done));
          p.request_us.push_back(micros(end - t.handshake_done));
        }
        f = res.fail;
      }
      sl.disarm();
      boost::system::error_code ec;
      sl.stream->lowest_layer().close(ec);
      if (f != failure::none) r.errors.add(f, name + ": " + detail);
    }
  }
  done = true;
}

asio::awaitable<void> watch(slot& sl, const bool& done) {
  while (!done) {
    co_await sleep_for(std::chrono::milliseconds(100));
    sl.expire_if_late(steady::now());
  }
}

}  // namespace

std::uint64_t error_counts::total() const {
  return std::accumulate(by_kind.begin(), by_kind.end(), std::uint64_t{0});
}

void error_counts::add(failure f, const std::string& detail) {
  ++by_kind[static_cast<std::size_t>(f)];
  if (first.empty()) first = std::string(failure_name(f)) + ": " + detail;
}

load_result run_load(const options& o, ssl::context& ctx, const tcp::endpoint& to) {
  load_run run(o, ctx, to);
  return run.run();
}

handshake_result run_handshakes(const options& o, ssl::context& ctx, const tcp::endpoint& to) {
  asio::io_context ioc{1};
  handshake_result r;
  slot sl;
  bool done = false;
  asio::co_spawn(ioc, handshakes(o, ctx, to, sl, r, done), asio::detached);
  asio::co_spawn(ioc, watch(sl, done), asio::detached);
  ioc.run();
  return r;
}

}  // namespace airlock::bench
