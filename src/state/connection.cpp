#include "state/connection.hpp"

#include "core/str_cat.hpp"
#include "state/transport.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <new>

namespace airlock::state {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

reply convert(const redisReply* r) {
  reply out;
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

bool is_string(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_STRING;
}

}  // namespace

connection::connection(asio::io_context& ioc, const client_options& options,
                       std::shared_ptr<asio::ssl::context> tls, std::string tls_error,
                       std::string role, std::size_t max_reply, hooks h)
    : ioc_(ioc),
      options_(options),
      role_(std::move(role)),
      max_reply_(max_reply),
      hooks_(std::move(h)),
      tls_(std::move(tls)),
      tls_error_(std::move(tls_error)),
      reader_(nullptr, &redisReaderFree),
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
  if (io_) io_->close();
  io_.reset();
  fail_calls("client closed");
}

void connection::connect() {
  phase_ = phase::connecting;
  if (!tls_error_.empty()) {
    lost(tls_error_);
    return;
  }
  ++generation_;
  io_ = std::make_shared<transport>(ioc_, options_, tls_);
  // A fresh parser: a partial reply of the last connection must not prefix this one's.
  reader_.reset(redisReaderCreate());
  unfinished_ = 0;
  out_.clear();
  write_busy_ = false;
  connect_deadline_ = clock::now() + options_.timeout;
  arm_deadline();
  io_->connect([this, gen = generation_](const std::string& error) {
    if (gen == generation_ && phase_ == phase::connecting) connected(error);
  });
}

void connection::connected(const std::string& error) {
  if (!error.empty() || reader_ == nullptr) {
    drop(error.empty() ? "out of memory" : error);
    return;
  }
  read();
  authenticate();
}

void connection::authenticate() {
  // Up only once the server has answered: AUTH, or PING without a password. A connection the
  // server drops at once (a TLS server refusing our certificate after a TLS 1.3 handshake,
  // plain text to a TLS port, maxclients) is then never reported up.
  phase_ = phase::authenticating;
  std::vector<std::string> args{"PING"};
  if (!options_.password.empty()) {
    args = {"AUTH"};
    if (!options_.username.empty()) args.push_back(options_.username);
    args.push_back(options_.password);
  }
  issue(args, [this](reply r) {
    if (phase_ != phase::authenticating) return;
    if (r.what == reply::kind::status)
      ready();
    else if (r.what == reply::kind::unavailable)
      drop(r.text);
    else  // never the password: Redis's own message names the user at most
      drop(core::str_cat(options_.password.empty() ? "PING" : "AUTH",
                         " refused: ", r.ok() ? "unexpected reply" : r.text));
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
  if (phase_ == phase::closed || phase_ == phase::down) return;
  ++generation_;  // whatever the old transport still completes is ignored
  if (io_) io_->close();
  io_.reset();
  phase_ = phase::down;  // so that a callback below cannot send on the old connection
  fail_calls(why);
  phase_ = phase::connecting;  // lost() reports the change
  lost(why);
}

void connection::fail_calls(const std::string& why) {
  // Taken out first: a callback may issue a new command (answered at once: not up).
  std::deque<call> failed;
  failed.swap(calls_);
  for (call& c : failed)
    c.done(reply::unavailable(why));
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
  if (phase_ != phase::up || !io_) {
    done(reply::unavailable("not connected"));
    return;
  }
  issue(args, std::move(done));
}

void connection::issue(const std::vector<std::string>& args, client::callback done) {
  calls_.push_back(call{std::move(done), clock::now() + options_.timeout});
  queue(args);
  arm_deadline();
}

void connection::queue(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int n =
      redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (n < 0 || cmd == nullptr) throw std::bad_alloc();
  out_.append(cmd, static_cast<std::size_t>(n));
  redisFreeCommand(cmd);
  flush();
}

void connection::flush() {
  if (write_busy_ || out_.empty() || !io_) return;
  write_busy_ = true;
  // Owned by the write (a dropped connection's write may complete after a new one started).
  auto bytes = std::make_shared<std::string>(std::move(out_));
  out_.clear();
  io_->write(*bytes,
             [this, bytes, gen = generation_](const boost::system::error_code& ec, std::size_t) {
               if (gen != generation_) return;
               write_busy_ = false;
               if (ec) {
                 drop(core::str_cat("write: ", ec.message()));
                 return;
               }
               flush();
             });
}

void connection::read() {
  io_->read([this, gen = generation_](const boost::system::error_code& ec, std::size_t n) {
    if (gen != generation_ || phase_ == phase::closed) return;
    if (ec) {
      drop(ec == asio::error::eof ? "connection closed by the server"
                                  : core::str_cat("read: ", ec.message()));
      return;
    }
    if (redisReaderFeed(reader_.get(), io_->buffer(), n) != REDIS_OK) {
      drop("out of memory");
      return;
    }
    unfinished_ += n;
    for (;;) {
      void* r = nullptr;
      if (redisReaderGetReply(reader_.get(), &r) != REDIS_OK) {
        drop(core::str_cat("protocol error: ", reader_->errstr));
        return;
      }
      if (r == nullptr) break;
      std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(r),
                                                         &freeReplyObject);
      // A whole reply: what is left unread belongs to the next one. One that came in a single
      // read is held to the bound too.
      const std::size_t left = reader_->len - reader_->pos;
      const std::size_t size = unfinished_ - std::min(left, unfinished_);
      unfinished_ = left;
      if (size > max_reply_) {
        drop(core::str_cat("reply too large (over ", max_reply_, " bytes)"));
        return;
      }
      dispatch(owned.get());
      if (gen != generation_ || phase_ == phase::closed) return;  // a callback dropped it
    }
    // hiredis buffers a bulk string until all of it is in, whatever length it announces, and
    // grows an array element by element: bounded here, not by a deadline (the pub/sub
    // connection has none).
    if (unfinished_ > max_reply_) {
      drop(core::str_cat("reply too large (over ", max_reply_, " bytes)"));
      return;
    }
    read();
  });
}

void connection::dispatch(const redisReply* r) {
  if (!calls_.empty()) {
    // RESP answers a connection's commands in order: this is the oldest call's.
    call c = std::move(calls_.front());
    calls_.pop_front();
    c.done(convert(r));
    arm_deadline();
    return;
  }
  // Nothing asked: a pub/sub push (["message", channel, text]; subscribe confirmations are
  // ["subscribe", channel, count]).
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return;
  const redisReply* type = r->element[0];
  const redisReply* ch = r->element[1];
  if (!is_string(type) || !is_string(ch)) return;
  const std::string_view what(type->str, type->len);
  if (what == "subscribe" && hooks_.on_subscribed) {
    hooks_.on_subscribed(std::string_view(ch->str, ch->len));
    return;
  }
  if (what != "message" || !hooks_.on_message) return;
  const redisReply* text = r->element[2];
  if (!is_string(text)) return;
  hooks_.on_message(std::string_view(ch->str, ch->len), std::string_view(text->str, text->len));
}

void connection::subscribe(const std::string& channel) {
  if (std::find(channels_.begin(), channels_.end(), channel) != channels_.end()) return;
  channels_.push_back(channel);
  if (phase_ == phase::up) subscribe_now(channel);
}

void connection::subscribe_now(const std::string& channel) {
  queue({"SUBSCRIBE", channel});
}

void connection::arm_deadline() {
  if (deadline_armed_) return;
  clock::time_point when;
  if (phase_ == phase::connecting)
    when = connect_deadline_;
  else if (!calls_.empty())
    when = calls_.front().deadline;
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
  if (!calls_.empty() && now >= calls_.front().deadline) {
    drop(core::str_cat("no answer within ", options_.timeout.count(), " ms"));
    return;
  }
  arm_deadline();
}

}  // namespace airlock::state
