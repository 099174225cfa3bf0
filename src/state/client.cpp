#include "state/client.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "state/connection.hpp"
#include "state/transport.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <thread>

namespace airlock::state {

namespace asio = boost::asio;

struct client::impl {
  explicit impl(client_options o) : options(std::move(o)), work(asio::make_work_guard(ioc)) {}

  client_options options;
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::shared_ptr<asio::ssl::context> tls;  // null: no TLS
  std::string tls_error;                    // TLS asked for, and its context failed
  std::unique_ptr<connection> commands;
  std::unique_ptr<connection> subscriber;  // opened by the first subscribe()
  struct handler {
    std::string channel;
    message_callback on_message;
    std::function<void()> on_subscribed;
  };
  std::vector<handler> handlers;
  std::vector<std::unique_ptr<asio::steady_timer>> timers;  // every()
  std::optional<bool> reported;  // the last mode reported; none before the first
  std::thread thread;
};

client::client(client_options options) : impl_(std::make_shared<impl>(std::move(options))) {
  impl& m = *impl_;
  if (m.options.tls) {
    m.tls = make_tls_context(*m.options.tls, m.tls_error);
    if (!m.tls && m.tls_error.empty()) m.tls_error = "TLS context unavailable";
  }
  connection::hooks h;
  h.on_ready = [&m] {
    if (m.options.on_connected) m.options.on_connected();
  };
  h.on_state = [this, &m](bool up, const std::string& why) {
    up_.store(up, std::memory_order_relaxed);
    if (m.reported == up) return;  // a failed retry while down is not a change
    const bool first = !m.reported;
    m.reported = up;
    if (!first) mode_changes_.fetch_add(1, std::memory_order_relaxed);
    if (up)
      AIRLOCK_LOG(info, "state", "store ", where(), " available: shared limits in force");
    else
      AIRLOCK_LOG(warn, "state", "store ", where(), " unavailable (", why,
                  "): on_unavailable applies until it is back");
    if (m.options.on_mode_change) m.options.on_mode_change(up);
  };
  m.commands = std::make_unique<connection>(m.ioc, m.options, m.tls, m.tls_error, "commands",
                                            m.options.max_reply_bytes, std::move(h));
  asio::post(m.ioc, [&m] { m.commands->start(); });
  m.thread = std::thread([&m] { m.ioc.run(); });
}

client::~client() {
  impl& m = *impl_;
  asio::post(m.ioc, [&m] {
    m.commands->close();
    if (m.subscriber) m.subscriber->close();
    for (auto& t : m.timers)
      t->cancel();
    m.work.reset();
  });
  if (m.thread.joinable()) m.thread.join();
}

void client::command(std::vector<std::string> args, callback done) {
  if (!up()) {
    done(reply::unavailable("store unavailable"));
    return;
  }
  impl& m = *impl_;
  asio::post(m.ioc, [&m, args = std::move(args), done = std::move(done)]() mutable {
    m.commands->send(args, std::move(done));
  });
}

void client::subscribe(std::string channel, message_callback on_message,
                       std::function<void()> on_subscribed) {
  impl& m = *impl_;
  asio::post(m.ioc, [&m, channel = std::move(channel), cb = std::move(on_message),
                     confirmed = std::move(on_subscribed)]() mutable {
    m.handlers.push_back({channel, std::move(cb), std::move(confirmed)});
    if (!m.subscriber) {
      connection::hooks h;
      h.on_message = [&m](std::string_view ch, std::string_view text) {
        for (const auto& x : m.handlers)
          if (x.channel == ch) x.on_message(ch, text);
      };
      h.on_subscribed = [&m](std::string_view ch) {
        for (const auto& x : m.handlers)
          if (x.channel == ch && x.on_subscribed) x.on_subscribed();
      };
      h.on_state = [&m](bool up, const std::string& why) {
        if (!up)
          AIRLOCK_LOG(debug, "state", "pub/sub connection to ", m.options.host, " down: ", why);
      };
      m.subscriber = std::make_unique<connection>(m.ioc, m.options, m.tls, m.tls_error, "pubsub",
                                                  m.options.max_message_bytes, std::move(h));
      m.subscriber->start();
    }
    m.subscriber->subscribe(channel);
  });
}

namespace {

// Re-arms `timer` after each tick that asks for more. The timer is the client's (cancelled by
// its destructor, on its thread), so the handler never outlives it.
void arm(asio::steady_timer& timer, std::chrono::milliseconds interval,
         std::shared_ptr<std::function<bool()>> tick) {
  timer.expires_after(interval);
  timer.async_wait([&timer, interval, tick](const boost::system::error_code& ec) {
    if (!ec && (*tick)()) arm(timer, interval, tick);
  });
}

}  // namespace

void client::every(std::chrono::milliseconds interval, std::function<bool()> tick) {
  impl& m = *impl_;
  asio::post(m.ioc, [&m, interval, tick = std::move(tick)]() mutable {
    if (!m.work.owns_work()) return;  // being destroyed
    m.timers.push_back(std::make_unique<asio::steady_timer>(m.ioc));
    arm(*m.timers.back(), interval, std::make_shared<std::function<bool()>>(std::move(tick)));
  });
}

std::string client::where() const {
  const client_options& o = impl_->options;
  if (!o.unix_path.empty()) return core::str_cat("unix:", o.unix_path);
  return core::str_cat(o.tls ? "tls:" : "", o.host, ":", o.port);
}

}  // namespace airlock::state
