#include "state/connection.hpp"

#include "core/str_cat.hpp"
#include "state/adapter.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>

namespace airlock::state {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

reply convert(const redisReply* r) {
  reply out;
  if (r == nullptr) return reply::unavailable("connection dropped");
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.what = reply::kind::string;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.what = reply::kind::status;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.what = reply::kind::error;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.what = reply::kind::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.what = reply::kind::array;
      out.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i)
        out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.what = reply::kind::nil;
      break;
  }
  return out;
}

connection* owner(const redisAsyncContext* ac) {
  return static_cast<connection*>(ac->data);
}

}  // namespace

connection::connection(asio::io_context& ioc, const client_options& options, std::string role,
                       hooks h)
    : ioc_(ioc),
      options_(options),
      role_(std::move(role)),
      hooks_(std::move(h)),
      deadline_timer_(ioc),
      retry_timer_(ioc) {}

connection::~connection() {
  close();
}

void connection::start() {
  if (phase_ == phase::down) connect();
}

void connection::close() {
  if (phase_ == phase::closed) return;
  phase_ = phase::closed;
  retry_timer_.cancel();
  deadline_timer_.cancel();
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    redisAsyncFree(ac);  // answers every call in flight (reply_cb with a null reply)
  }
  // Nothing can be in flight without a context; this is belt and braces.
  while (!calls_.empty())
    finish(calls_.front().get(), reply::unavailable("client closed"));
}

void connection::connect() {
  phase_ = phase::connecting;
  redisAsyncContext* ac = options_.unix_path.empty()
                              ? redisAsyncConnect(options_.host.c_str(), options_.port)
                              : redisAsyncConnectUnix(options_.unix_path.c_str());
  if (ac == nullptr || ac->err != 0 || !attach_asio(ac, ioc_)) {
    const std::string why = ac != nullptr && ac->err != 0 ? ac->errstr : "cannot connect";
    if (ac != nullptr) redisAsyncFree(ac);
    lost(why);
    return;
  }
  ac->data = this;
  // A peer that vanished without a FIN (a node gone) is noticed by the command connection's
  // deadlines, but the pub/sub connection sends nothing: TCP keepalive (hiredis: 15 s idle)
  // ends it, and it reconnects and resubscribes. TCP only (TCP_KEEPIDLE fails on a Unix
  // socket, and hiredis would then mark the context as failed).
  if (options_.unix_path.empty()) redisEnableKeepAlive(&ac->c);
  redisAsyncSetConnectCallback(ac, &connection::connected_cb);
  redisAsyncSetDisconnectCallback(ac, &connection::disconnected_cb);
  ac_ = ac;
  connect_deadline_ = clock::now() + options_.timeout;
  arm_deadline();
}

void connection::connected_cb(const redisAsyncContext* ac, int status) {
  connection* self = owner(ac);
  if (self == nullptr || self->ac_ != ac) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback.
    self->ac_ = nullptr;
    self->lost(ac->errstr[0] != '\0' ? ac->errstr : "cannot connect");
    return;
  }
  if (self->options_.password.empty())
    self->ready();
  else
    self->authenticate();
}

void connection::disconnected_cb(const redisAsyncContext* ac, int /*status*/) {
  connection* self = owner(ac);
  if (self == nullptr || self->ac_ != ac) return;  // our own drop: already handled
  self->ac_ = nullptr;                             // hiredis frees it after this callback
  self->lost(ac->errstr[0] != '\0' ? ac->errstr : "connection closed by the server");
}

void connection::authenticate() {
  phase_ = phase::authenticating;
  std::vector<std::string> args{"AUTH"};
  if (!options_.username.empty()) args.push_back(options_.username);
  args.push_back(options_.password);
  issue(args, [this](reply r) {
    if (phase_ != phase::authenticating) return;
    if (r.what == reply::kind::status)
      ready();
    else  // never the password: Redis's own message names the user at most
      drop(core::str_cat("AUTH refused: ", r.ok() ? "unexpected reply" : r.text));
  });
}

void connection::ready() {
  phase_ = phase::up;
  attempt_ = 0;
  for (const std::string& ch : channels_)
    subscribe_now(ch);
  // Up first, so that the hook's own commands are accepted.
  if (hooks_.on_state) hooks_.on_state(true, "connected");
  if (hooks_.on_ready) hooks_.on_ready();
}

void connection::lost(const std::string& why) {
  if (phase_ == phase::closed) return;
  phase_ = phase::down;
  if (hooks_.on_state) hooks_.on_state(false, why);
  schedule_reconnect();
}

void connection::drop(const std::string& why) {
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    // Inside a hiredis callback this is deferred until the callback returns; either way every
    // call in flight is answered through reply_cb.
    redisAsyncFree(ac);
  }
  lost(why);
}

void connection::schedule_reconnect() {
  // 100 ms doubling to max_backoff, then +-25% jitter so that replicas do not reconnect in step.
  const auto base = std::min<std::int64_t>(
      options_.max_backoff.count(),
      options_.min_backoff.count() * (std::int64_t{1} << std::min(attempt_, 16u)));
  ++attempt_;
  const auto spread = std::max<std::int64_t>(base / 4, 1);
  const std::int64_t delay =
      base - spread + static_cast<std::int64_t>(jitter_() % static_cast<unsigned>(2 * spread));
  retry_timer_.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(delay, 1)));
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && phase_ == phase::down) connect();
  });
}

void connection::send(const std::vector<std::string>& args, client::callback done) {
  if (phase_ != phase::up || ac_ == nullptr) {
    done(reply::unavailable("not connected"));
    return;
  }
  issue(args, std::move(done));
}

void connection::issue(const std::vector<std::string>& args, client::callback done) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto c = std::make_unique<call>(call{std::move(done), clock::now() + options_.timeout});
  call* raw = c.get();
  calls_.push_back(std::move(c));
  if (redisAsyncCommandArgv(ac_, &connection::reply_cb, raw, static_cast<int>(argv.size()),
                            argv.data(), lens.data()) != REDIS_OK) {
    finish(raw, reply::unavailable("not connected"));
    return;
  }
  arm_deadline();
}

void connection::reply_cb(redisAsyncContext* ac, void* r, void* privdata) {
  connection* self = owner(ac);
  if (self == nullptr) return;
  self->finish(static_cast<call*>(privdata), convert(static_cast<redisReply*>(r)));
}

void connection::finish(call* c, reply r) {
  const auto it = std::find_if(calls_.begin(), calls_.end(),
                               [c](const std::unique_ptr<call>& x) { return x.get() == c; });
  if (it == calls_.end()) return;
  std::unique_ptr<call> mine = std::move(*it);
  calls_.erase(it);
  mine->done(std::move(r));
}

void connection::subscribe(const std::string& channel) {
  if (std::find(channels_.begin(), channels_.end(), channel) != channels_.end()) return;
  channels_.push_back(channel);
  if (phase_ == phase::up) subscribe_now(channel);
}

void connection::subscribe_now(const std::string& channel) {
  const char* argv[] = {"SUBSCRIBE", channel.data()};
  const std::size_t lens[] = {9, channel.size()};
  redisAsyncCommandArgv(ac_, &connection::message_cb, nullptr, 2, argv, lens);
}

void connection::message_cb(redisAsyncContext* ac, void* r, void* /*privdata*/) {
  connection* self = owner(ac);
  const auto* m = static_cast<const redisReply*>(r);
  if (self == nullptr || m == nullptr || m->type != REDIS_REPLY_ARRAY || m->elements != 3) return;
  const redisReply* type = m->element[0];
  if (type->type != REDIS_REPLY_STRING || std::string_view(type->str, type->len) != "message")
    return;
  const redisReply* ch = m->element[1];
  const redisReply* text = m->element[2];
  if (ch->type != REDIS_REPLY_STRING || text->type != REDIS_REPLY_STRING) return;
  if (self->hooks_.on_message)
    self->hooks_.on_message(std::string_view(ch->str, ch->len),
                            std::string_view(text->str, text->len));
}

void connection::arm_deadline() {
  if (deadline_armed_) return;
  clock::time_point when;
  if (phase_ == phase::connecting)
    when = connect_deadline_;
  else if (!calls_.empty())
    when = calls_.front()->deadline;
  else
    return;
  deadline_armed_ = true;
  deadline_timer_.expires_at(when);
  deadline_timer_.async_wait([this](const boost::system::error_code& ec) {
    deadline_armed_ = false;
    if (!ec) check_deadlines();
  });
}

void connection::check_deadlines() {
  const auto now = clock::now();
  if (phase_ == phase::connecting && now >= connect_deadline_) {
    drop(core::str_cat("no connection within ", options_.timeout.count(), " ms"));
    return;
  }
  // Answers come in order: when the oldest is late, the connection is stuck (a dead peer, a
  // blocked server); the others would be later still.
  if (!calls_.empty() && now >= calls_.front()->deadline) {
    drop(core::str_cat("no answer within ", options_.timeout.count(), " ms"));
    return;
  }
  arm_deadline();
}

}  // namespace airlock::state
