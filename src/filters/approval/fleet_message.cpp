#include "filters/approval/fleet_message.hpp"

#include "filters/approval/json_fields.hpp"

#include <boost/json.hpp>

#include <charconv>

namespace airlock::filters::approval::fleet_msg {
namespace {

namespace json = boost::json;
using sys_clock = std::chrono::system_clock;

// Bounds of the fields read back (a request's path is bounded by the proxy's request head).
constexpr std::size_t max_name = 256;
constexpr std::size_t max_text = 8 * 1024;
constexpr std::int64_t max_duration_ms = 30LL * 24 * 3600 * 1000;  // as admin_api.cpp
// Unix milliseconds up to the year 2286: beyond, a system_clock time point (nanoseconds in
// libstdc++) would overflow.
constexpr std::int64_t max_time_ms = 10'000'000'000'000;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Reads typed, bounded fields of one object; the first failure sticks (ok() false).
class reader {
 public:
  explicit reader(const json::object& o) : o_(o) {}
  bool ok() const { return ok_; }

  std::string text(std::string_view key, std::size_t max, bool required = true) {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr) {
      if (required) ok_ = false;
      return {};
    }
    const json::string* s = v->if_string();
    if (s == nullptr || s->size() > max) {
      ok_ = false;
      return {};
    }
    return std::string(*s);
  }
  std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi) {
    const json::value* v = o_.if_contains(key);
    std::int64_t n = 0;
    if (v != nullptr && v->is_int64())
      n = v->as_int64();
    else if (v != nullptr && v->is_uint64() && v->as_uint64() <= std::uint64_t(INT64_MAX))
      n = static_cast<std::int64_t>(v->as_uint64());
    else
      ok_ = false;
    if (n < lo || n > hi) ok_ = false;
    return n;
  }
  std::uint64_t positive(std::string_view key) {
    return static_cast<std::uint64_t>(integer(key, 1, INT64_MAX));
  }
  bool boolean(std::string_view key) {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || !v->is_bool()) {
      ok_ = false;
      return false;
    }
    return v->as_bool();
  }
  std::string replica(std::string_view key) {
    std::string r = text(key, 64);
    if (!valid_replica(r)) ok_ = false;
    return r;
  }

 private:
  const json::object& o_;
  bool ok_ = true;
};

request_info read_request(reader& in) {
  request_info r;
  r.agent = in.text("agent", max_name);
  r.host = in.text("host", max_name);
  r.port = static_cast<std::uint16_t>(in.integer("port", 0, 65535));
  r.method = in.text("method", 32);
  r.path = in.text("path", max_text);
  return r;
}

std::optional<decide> read_decide(reader& in) {
  decide m;
  m.from = in.replica("from");
  m.nonce = in.positive("nonce");
  m.id = in.positive("id");
  m.d.approve = in.boolean("approve");
  const auto s = parse_scope(in.text("scope", 16));
  m.d.duration = std::chrono::milliseconds(in.integer("duration_ms", 1, max_duration_ms));
  m.d.same_method = in.boolean("method");
  m.d.path_prefix = in.text("path_prefix", 1024);
  m.d.by = in.text("by", max_name);
  if (!in.ok() || !s) return std::nullopt;
  if (!m.d.path_prefix.empty() && m.d.path_prefix.front() != '/') return std::nullopt;
  m.d.scope = *s;
  return m;
}

std::optional<ack> read_ack(reader& in) {
  ack m;
  m.nonce = in.positive("nonce");
  m.status = static_cast<unsigned>(in.integer("status", 200, 599));
  m.message = in.text("message", 1024);
  m.target = read_request(in);
  if (!in.ok()) return std::nullopt;
  return m;
}

std::optional<grant_msg> read_grant(reader& in) {
  grant_msg m;
  m.from = in.replica("from");
  m.g.id = in.positive("id");
  m.g.agent = in.text("agent", max_name);
  m.g.host = in.text("host", max_name);
  m.g.port = static_cast<std::uint16_t>(in.integer("port", 1, 65535));
  m.g.method = in.text("method", 32);
  m.g.path_prefix = in.text("path_prefix", 1024);
  const std::int64_t expires = in.integer("expires_ms", 0, max_time_ms);
  m.g.by = in.text("by", max_name);
  if (!in.ok() || m.g.agent.empty() || m.g.host.empty()) return std::nullopt;
  if (!m.g.path_prefix.empty() && m.g.path_prefix.front() != '/') return std::nullopt;
  m.g.expires = expires == 0 ? sys_clock::time_point::max()
                             : sys_clock::time_point(std::chrono::milliseconds(expires));
  return m;
}

std::optional<json::object> parse_object(std::string_view text) {
  if (text.empty() || text.size() > max_message) return std::nullopt;
  boost::system::error_code ec;
  // Depth bounded: the messages are flat objects.
  json::parse_options opt;
  opt.max_depth = 4;
  json::value v = json::parse(text, ec, {}, opt);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

}  // namespace

bool valid_replica(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!name_char(c)) return false;
  return true;
}

std::string sanitize_replica(std::string_view text) {
  std::string out(text.substr(0, 64));
  for (char& c : out)
    if (!name_char(c)) c = '-';
  return out.empty() ? std::string("replica") : out;
}

std::optional<qualified_id> parse_qualified(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  qualified_id q;
  q.replica = std::string(text.substr(0, colon));
  const std::string_view num = text.substr(colon + 1);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), q.id);
  if (!valid_replica(q.replica) || ec != std::errc{} || p != num.data() + num.size() || q.id == 0)
    return std::nullopt;
  return q;
}

std::string encode(const held& h) {
  json::object o;
  o["replica"] = h.replica;
  o["id"] = h.id;
  put_request(o, h.request);
  o["connect"] = h.request.connect;
  o["since"] = h.since_s;
  o["deadline_ms"] = h.deadline_ms;
  return json::serialize(o);
}

std::optional<held> decode_held(std::string_view text) {
  auto o = parse_object(text);
  if (!o) return std::nullopt;
  reader in(*o);
  held h;
  h.replica = in.replica("replica");
  h.id = in.positive("id");
  const std::string kind = in.text("kind", 16);
  h.request = read_request(in);
  h.request.in_tunnel = in.boolean("in_tunnel");
  h.request.connect = in.boolean("connect");
  h.request.rule = in.text("rule", max_name);
  h.request.reason = in.text("reason", max_text);
  h.since_s = in.integer("since", 0, max_time_ms / 1000);
  h.deadline_ms = in.integer("deadline_ms", 0, max_time_ms);
  if (!in.ok() || (kind != "request" && kind != "access_request")) return std::nullopt;
  h.request.access_request = kind == "access_request";
  return h;
}

std::string encode(const decide& m) {
  json::object o;
  o["t"] = "decide";
  o["from"] = m.from;
  o["nonce"] = m.nonce;
  o["id"] = m.id;
  o["approve"] = m.d.approve;
  o["scope"] = scope_name(m.d.scope);
  o["duration_ms"] = m.d.duration.count();
  o["method"] = m.d.same_method;
  o["path_prefix"] = m.d.path_prefix;
  o["by"] = m.d.by;
  return json::serialize(o);
}

std::string encode(const ack& m) {
  json::object o;
  o["t"] = "ack";
  o["nonce"] = m.nonce;
  o["status"] = m.status;
  o["message"] = m.message.substr(0, 1024);
  put_request(o, m.target);
  return json::serialize(o);
}

std::string encode(const grant_msg& m) {
  json::object o;
  o["t"] = "grant";
  o["from"] = m.from;
  put_grant(o, m.g);
  o["expires_ms"] =
      m.g.expires == sys_clock::time_point::max()
          ? std::int64_t{0}
          : std::chrono::duration_cast<std::chrono::milliseconds>(m.g.expires.time_since_epoch())
                .count();
  return json::serialize(o);
}

std::optional<incoming> decode(std::string_view text) {
  auto o = parse_object(text);
  if (!o) return std::nullopt;
  reader in(*o);
  const std::string t = in.text("t", 16);
  incoming m;
  if (t == "decide")
    m.decision = read_decide(in);
  else if (t == "ack")
    m.answer = read_ack(in);
  else if (t == "grant")
    m.grant = read_grant(in);
  if (!m.decision && !m.answer && !m.grant) return std::nullopt;
  return m;
}

}  // namespace airlock::filters::approval::fleet_msg
