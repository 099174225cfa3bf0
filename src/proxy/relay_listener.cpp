#include "proxy/relay_listener.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"
#include "proxy/relay_session.hpp"
#include "proxy/session_io.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;

void server::relay_listener::hand_over(std::vector<std::unique_ptr<worker>>& workers, int fd,
                                       bool v6) {
  worker& w = *workers[next++ % workers.size()];
  asio::post(w.context(), [&w, fd, v6] {
    tcp::socket socket(w.context());
    boost::system::error_code ec;
    socket.assign(v6 ? tcp::v6() : tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return;
    }
    if (w.shared().draining.load()) return;  // socket closes here
    auto snap = w.shared().current();
    const auto& limits = snap->limits();
    // Relay connections share one client slot key: the relay stands for its agents.
    const auto key = asio::ip::address(asio::ip::address_v4::loopback());
    if (!w.shared().limiter.try_acquire(key, limits.max_connections,
                                        limits.max_connections_per_client))
      return;
    asio::co_spawn(
        w.context(),
        [&w, s = std::move(socket), key]() mutable -> asio::awaitable<void> {
          client_slot slot(w.shared().limiter, key);
          co_await run_relay_session(w, std::move(s));
        },
        asio::detached);
  });
}

template <class Acceptor>
asio::awaitable<void> server::relay_listener::accept_loop(
    Acceptor& acceptor, std::vector<std::unique_ptr<worker>>& workers) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      AIRLOCK_LOG(warn, "proxy", "relay accept failed: ", ec.message());
      asio::steady_timer t(ioc, std::chrono::milliseconds(50));
      co_await t.async_wait(use_tuple);
      continue;
    }
    boost::system::error_code rec;
    const bool v6 = socket.local_endpoint(rec).protocol().family() == AF_INET6;
    const int fd = socket.release(rec);
    if (rec) continue;
    hand_over(workers, fd, v6);
  }
}

bool server::start_relay_listener(const std::string& where, const std::string& group,
                                  std::string& error) {
  auto r = std::make_unique<relay_listener>();
  try {
    if (where.find('/') != std::string::npos) {
      // A stale socket from an earlier run is replaced; any other file is left alone.
      struct stat st {};
      if (::lstat(where.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
          error = core::str_cat("listen.relay: '", where, "' exists and is not a socket");
          return false;
        }
        ::unlink(where.c_str());
      }
      gid_t gid = static_cast<gid_t>(-1);
      if (!group.empty()) {
        struct group* g = ::getgrnam(group.c_str());
        if (!g) {
          error = core::str_cat("listen.relay_group: no group '", group, "'");
          return false;
        }
        gid = g->gr_gid;
      }
      // Created without any permission for others from the first moment (no window in which
      // another user could connect and name an agent).
      const mode_t old_mask = ::umask(0177);
      r->unix_acceptor.emplace(r->ioc);
      boost::system::error_code ec;
      r->unix_acceptor->open(asio::local::stream_protocol(), ec);
      if (!ec) r->unix_acceptor->bind(asio::local::stream_protocol::endpoint(where), ec);
      ::umask(old_mask);
      if (ec) {
        error = core::str_cat("listen.relay: cannot bind '", where, "': ", ec.message());
        return false;
      }
      r->unix_path = where;
      if (gid != static_cast<gid_t>(-1)) {
        if (::chown(where.c_str(), static_cast<uid_t>(-1), gid) != 0 ||
            ::chmod(where.c_str(), 0660) != 0) {
          error = core::str_cat("listen.relay: cannot give '", where, "' to group '", group,
                                "': ", std::strerror(errno));
          ::unlink(where.c_str());
          return false;
        }
      }
      r->unix_acceptor->listen(asio::socket_base::max_listen_connections);
      asio::co_spawn(r->ioc, r->accept_loop(*r->unix_acceptor, workers_), asio::detached);
    } else {
      auto ep = parse_listen(where);
      if (!ep) {
        error = core::str_cat("listen.relay: '", where,
                              "' is neither a socket path nor an IP address with a port");
        return false;
      }
      r->tcp_acceptor.emplace(r->ioc, *ep);
      own_endpoints_.push_back(r->tcp_acceptor->local_endpoint());
      asio::co_spawn(r->ioc, r->accept_loop(*r->tcp_acceptor, workers_), asio::detached);
    }
  } catch (const boost::system::system_error& e) {
    error = core::str_cat("listen.relay: cannot listen on ", where, ": ", e.code().message());
    return false;
  }
  r->thread = std::thread([ctx = &r->ioc] {
    try {
      ctx->run();
    } catch (const std::exception& e) {
      AIRLOCK_LOG(error, "proxy", "relay listener stopped: ", e.what());
    }
  });
  relay_ = std::move(r);
  return true;
}

}  // namespace airlock::proxy
