#include "proxy/session.hpp"

#include "core/ascii.hpp"
#include "core/errc.hpp"
#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "filters/credentials/injection.hpp"
#include "filters/credentials/placeholder_scanner.hpp"
#include "filters/credentials/placeholders.hpp"
#include "filters/redaction/response_body.hpp"
#include "filters/validation/headers.hpp"
#include "filters/validation/json_body.hpp"
#include "filters/validation/query.hpp"
#include "net/proxy_protocol.hpp"
#include "net/client_hello.hpp"
#include "net/host.hpp"
#include "policy/snapshot.hpp"
#include "proxy/answer.hpp"
#include "proxy/byte_throttle.hpp"
#include "proxy/exchange_record.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/interception.hpp"
#include "proxy/steady_ns.hpp"
#include "proxy/tunnel.hpp"
#include "proxy/upstream_connector.hpp"
#include "proxy/worker.hpp"
#include "telemetry/metrics.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_cache.hpp"
#include "tls/upstream_sessions.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

namespace airlock::proxy {
using core::iequals;
using core::trim_ows;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using core::errc;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t relay_buffer_size = 64 * 1024;

std::uint32_t header_limit(const policy::model::limits& limits) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(limits.header_bytes, UINT32_MAX));
}

struct session_context;
asio::awaitable<void> handle_connect(session_context& s, exchange_record& rec,
                                     const std::shared_ptr<const policy::snapshot>& snap,
                                     const policy::decision& decision, const net::authority& target,
                                     unsigned version, const byte_throttle& upload,
                                     const byte_throttle& download);

// Host header value for the upstream: the port is left out when it is the scheme's default.
std::string host_header(const net::normalized_host& host, std::uint16_t port,
                        std::uint16_t default_port) {
  std::string h =
      host.kind == net::host_kind::ipv6 ? core::str_cat('[', host.text, ']') : host.text;
  if (port != default_port) h += core::str_cat(':', port);
  return h;
}

// Smuggling defences beyond what Beast's parser enforces (RFC 9112 section 6.3): one
// Content-Length at most, never both framing headers, and "chunked" as the only transfer
// coding a request may use. Returns an empty string when the framing is acceptable.
std::string framing_problem(const http::request_parser<http::buffer_body>& parser) {
  const auto& req = parser.get();
  std::size_t content_lengths = 0, transfer_encodings = 0, hosts = 0;
  for (const auto& f : req) {
    if (f.name() == http::field::content_length)
      ++content_lengths;
    else if (f.name() == http::field::transfer_encoding)
      ++transfer_encodings;
    else if (f.name() == http::field::host)
      ++hosts;
  }
  if (content_lengths > 1) return "more than one Content-Length";
  if (hosts > 1) return "more than one Host";
  if (transfer_encodings > 0) {
    if (content_lengths > 0) return "both Content-Length and Transfer-Encoding";
    if (req.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
    if (transfer_encodings > 1 ||
        !iequals(trim_ows(req[http::field::transfer_encoding]), "chunked"))
      return "unsupported Transfer-Encoding (only chunked)";
  }
  return {};
}

// The per-connection state shared by the exchanges of one client connection.
struct session_context {
  worker& w;
  beast::tcp_stream client;
  tcp::endpoint client_endpoint;
  std::string client_text;
  beast::flat_buffer buffer;
  std::list<session_entry>::iterator entry;
  std::uint64_t requests = 0;  // request heads started on this connection
  std::string relay_agent;     // set for relay connections: the agent the launcher vouches for
};

using tls_upstream = ssl::stream<beast::tcp_stream>;

// An intercepted CONNECT: the client speaks TLS to us (a leaf we minted), we speak TLS to the
// origin (its real certificate verified). The upstream is connected lazily, and again when
// the origin closes it between requests.
struct tunnel_context {
  net::authority target;
  std::string agent;  // identified at CONNECT; inner requests cannot change it
  std::shared_ptr<const interception> tls;
  std::optional<tls_upstream> upstream;
  beast::flat_buffer upstream_buffer;
  std::string upstream_text;
};

template <class Stream>
beast::tcp_stream& lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

// Writes the answer for the refusal already recorded in rec (rec.refuse). The reason and
// detail are set by a plain call first so that no temporary lives across a co_await (GCC 12
// has destroyed such temporaries twice). Returns whether the connection may continue.
template <class Client>
asio::awaitable<bool> send_answer(Client& client, exchange_record& rec, unsigned version,
                                  bool keep_alive) {
  auto res = make_answer(rec.reason, rec.detail, version, keep_alive);
  if (rec.retry_after > 0) res.set(http::field::retry_after, std::to_string(rec.retry_after));
  rec.status = res.result_int();
  lowest(client).expires_after(std::chrono::seconds(10));
  auto [ec, n] = co_await http::async_write(client, res, use_tuple);
  co_return !ec && keep_alive;
}

// Reads a body from one side through a parser and writes it to the other side through a
// serializer, piece by piece (the relay loop of Beast's example/doc/http_examples.hpp), with
// each side's error kept apart so the caller knows whom to blame.
struct relay_result {
  beast::error_code read_ec;   // error on the side being read
  beast::error_code write_ec;  // error on the side being written
  std::uint64_t bytes = 0;
  // A request body carried the placeholder of this secret (index) to a host it is not bound
  // to: relaying stopped before the piece that holds it was written.
  std::size_t placeholder = filters::credentials::placeholder_scanner::none;
};

template <bool IsRequest, class ReadStream, class WriteStream>
asio::awaitable<relay_result> relay_body(
    worker& w, ReadStream& from, beast::flat_buffer& from_buffer,
    http::parser<IsRequest, http::buffer_body>& parser, WriteStream& to,
    http::serializer<IsRequest, http::buffer_body>& sr, std::chrono::milliseconds idle_timeout,
    const byte_throttle& throttle, filters::credentials::placeholder_scanner* scan = nullptr) {
  relay_result result;
  // Lent by the worker only while a body moves, so idle connections hold no large buffer.
  auto buf = w.borrow_buffer();
  const std::size_t piece = throttle ? std::min(buf.size(), throttle.max_read) : buf.size();
  // Read in large pieces: a flat_buffer with little capacity would be read 512 bytes at a time.
  if (!parser.is_done()) from_buffer.reserve(relay_buffer_size);
  do {
    if (!parser.is_done()) {
      parser.get().body().data = buf.data();
      parser.get().body().size = piece;
      lowest(from).expires_after(idle_timeout);
      // read_some, not read: pass on what has arrived (a server-sent event, a slow chunk)
      // instead of waiting for the buffer to fill.
      auto [ec, n] = co_await http::async_read_some(from, from_buffer, parser, use_tuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        result.read_ec = ec;
        co_return result;
      }
      const std::size_t got = piece - parser.get().body().size;
      if (got == 0 && !parser.is_done()) continue;  // only framing so far (a chunk header)
      if (scan && got > 0) {
        result.placeholder = scan->scan(std::string_view(buf.data(), got));
        if (result.placeholder != filters::credentials::placeholder_scanner::none) co_return result;
      }
      if (throttle) co_await throttle.pace(got);
      // An empty piece must be passed as "no data": for a chunked message the serializer
      // would write a zero-size chunk, which is the end of the body.
      parser.get().body().data = got ? buf.data() : nullptr;
      parser.get().body().size = got;
      parser.get().body().more = !parser.is_done();
      result.bytes += got;
    } else {
      parser.get().body().data = nullptr;
      parser.get().body().size = 0;
      parser.get().body().more = false;
    }
    // The first write carries the head too (one send for a small message).
    lowest(to).expires_after(idle_timeout);
    auto [ec, n] = co_await http::async_write(to, sr, use_tuple);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      result.write_ec = ec;
      co_return result;
    }
  } while (!parser.is_done() || !sr.is_done());
  if (from_buffer.size() == 0 && from_buffer.capacity() > 16 * 1024) from_buffer.shrink_to_fit();
  co_return result;
}

// Tells a client that sent "Expect: 100-continue" to go on with its body (RFC 9110 section
// 10.1.1). Returns the write's error.
template <class Client>
asio::awaitable<beast::error_code> send_continue(Client& client,
                                                 std::chrono::milliseconds timeout) {
  static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
  lowest(client).expires_after(timeout);
  auto [ec, n] = co_await asio::async_write(client, asio::buffer(cont), use_tuple);
  co_return ec;
}

// Reads a request body whole into `out` (the parser's body limit bounds it), for a rule that
// must see all of it before anything is forwarded.
template <class Client>
asio::awaitable<beast::error_code> read_whole_body(Client& client, beast::flat_buffer& buffer,
                                                   http::request_parser<http::buffer_body>& p,
                                                   std::string& out,
                                                   std::chrono::milliseconds idle_timeout) {
  constexpr std::size_t piece = 64 * 1024;
  while (!p.is_done()) {
    const std::size_t old = out.size();
    out.resize(old + piece);
    p.get().body().data = out.data() + old;
    p.get().body().size = piece;
    lowest(client).expires_after(idle_timeout);
    auto [ec, n] = co_await http::async_read_some(client, buffer, p, use_tuple);
    out.resize(old + (piece - p.get().body().size));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return ec;
  }
  co_return beast::error_code{};
}

// Waits for the first byte of the next request with the idle timeout (a kept-alive client
// may think for a while); the rest of the head then gets head_timeout. False when the client
// went away or idled out.
template <class Client>
asio::awaitable<bool> wait_for_request(Client& client, beast::flat_buffer& buffer,
                                       std::chrono::milliseconds idle) {
  if (buffer.size() > 0) co_return true;
  lowest(client).expires_after(idle);
  auto [ec, n] = co_await client.async_read_some(buffer.prepare(4096), use_tuple);
  buffer.commit(n);
  co_return !ec && n > 0;
}

// The protocol a client asks to switch to, lower case; only an Upgrade announced in
// Connection counts (RFC 9110 section 7.8).
std::string requested_upgrade(const http::request<http::buffer_body>& req) {
  auto conn = req[http::field::connection];
  if (conn.empty() || !req.count(http::field::upgrade)) return {};
  if (core::lower(conn).find("upgrade") == std::string::npos) return {};
  return core::lower(trim_ows(req[http::field::upgrade]));
}

// For the error message only: does an http:// URL that failed to parse carry a port that is
// not 1..65535 in plain decimal?
bool has_bad_port(std::string_view url) {
  auto start = url.find("://");
  if (start == std::string_view::npos) return false;
  auto authority = url.substr(start + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  auto close = authority.rfind(']');
  auto colon = authority.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close))
    return false;
  auto port = authority.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.front() == '0') return true;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return true;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value == 0 || value > 65535;
}

upstream_request upstream_for(const net::authority& target, const policy::compiled_rule& rule,
                              const policy::model::limits& limits) {
  upstream_request ur;
  ur.host = &target.host;
  ur.port = target.port;
  ur.pinned = rule.pinned;
  ur.extra_allow = rule.allow_cidrs;
  ur.dns_timeout = limits.dns_timeout;
  ur.connect_timeout = limits.connect_timeout;
  return ur;
}

// Records the refusal of a request that carries a secret's placeholder to a host the secret is
// not bound to, and logs it as the exfiltration attempt it is.
void refuse_placeholder(exchange_record& rec, const policy::compiled_secret& secret,
                        const net::authority& target) {
  rec.refuse(errc::placeholder_refused, core::str_cat("the placeholder of secret ", secret.name,
                                                      " may not be sent to ", target.host.text));
  AIRLOCK_LOG(warn, "proxy", "exfiltration attempt: agent ", rec.agent,
              " sent the placeholder of secret ", secret.name, " to ", target.host.text, ':',
              target.port, " (refused)");
}

struct forward_result {
  bool client_continues = false;   // the client connection may carry another request
  bool upstream_reusable = false;  // the upstream connection may carry another request
  // A reused pooled connection turned out closed before any response byte: nothing was
  // answered, and a bodiless request may be sent again on a fresh connection.
  bool stale_connection = false;
};

struct forward_params {
  unsigned version = 11;
  bool has_body = false;
  bool client_keep_alive = true;
  bool expect_continue = false;
  bool head = false;
  std::string upgrade;          // allowed upgrade protocol, empty if none
  bool retry_if_stale = false;  // a pooled connection carrying a bodiless request
  // The request body, already read whole (a rule validates it); null = stream it from the
  // client. The head's Content-Length already says its size.
  const std::string* body = nullptr;
  byte_throttle upload;    // paces the request body
  byte_throttle download;  // paces the response body
  // Response redaction: the engine (null = the response passes as it is), the most decoded
  // text passed before the body is cut off, and the rule's name for the cut-off marker.
  std::shared_ptr<const filters::redaction::engine> redaction;
  // Literal secrets only: guards a binary body, which passes unchanged unless it carries one.
  std::shared_ptr<const filters::redaction::engine> binary_guard;
  std::uint64_t redact_max_bytes = 0;
  std::string_view rule_name;
  // Watches a streamed request body for placeholders (null: nothing to watch for).
  filters::credentials::placeholder_scanner* body_scan = nullptr;
  std::span<const policy::compiled_secret> secrets;
  const net::authority* target = nullptr;
};

// Whether a response header is left out of redaction: the framing and coding fields the proxy
// itself rewrites or relies on.
bool framing_field(http::field f) {
  return f == http::field::content_length || f == http::field::transfer_encoding ||
         f == http::field::content_encoding || f == http::field::content_type;
}

// Redacts every other response header value in place (all in one pass); hits are added to
// `hits`.
template <class Fields>
void redact_header_values(const filters::redaction::engine& e, Fields& head,
                          filters::redaction::hit_counts& hits) {
  std::vector<std::string_view> values;
  for (const auto& f : head)
    if (!framing_field(f.name())) values.push_back(f.value());
  if (values.empty()) return;
  auto redacted = filters::redaction::redact_header_values(e, values, &hits);
  // Fields cannot be edited in place: the changed ones are removed and added back.
  std::vector<std::pair<std::string, std::string>> changed;
  std::size_t i = 0;
  for (auto f = head.begin(); f != head.end();) {
    if (framing_field(f->name())) {
      ++f;
      continue;
    }
    if (redacted[i] != f->value()) {
      changed.emplace_back(std::string(f->name_string()), std::move(redacted[i]));
      f = head.erase(f);
    } else {
      ++f;
    }
    ++i;
  }
  for (auto& [name, value] : changed)
    head.insert(name, value);
}

// Under a redacting rule only codings the proxy can decode may come back: the client's
// Accept-Encoding is narrowed to gzip, deflate and identity (identity when nothing is left).
void narrow_accept_encoding(http::fields& head) {
  std::string kept;
  for (const auto& f : head) {
    if (f.name() != http::field::accept_encoding) continue;
    std::string_view list = f.value();
    while (!list.empty()) {
      const auto comma = list.find(',');
      const std::string_view member = trim_ows(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      const std::string coding = core::lower(trim_ows(member.substr(0, member.find(';'))));
      if (coding == "gzip" || coding == "x-gzip" || coding == "deflate" || coding == "identity") {
        if (!kept.empty()) kept += ", ";
        kept += member;
      }
    }
  }
  head.set(http::field::accept_encoding, kept.empty() ? std::string("identity") : kept);
}

// Writes `out` as the next piece of a buffer_body message (the last one when !more), then
// clears it. An empty piece is passed as "no data" (see relay_body).
template <class WriteStream>
asio::awaitable<beast::error_code> write_body_piece(
    WriteStream& to, http::response_serializer<http::buffer_body>& sr,
    http::buffer_body::value_type& b, std::string& out, bool more,
    std::chrono::milliseconds idle_timeout) {
  b.data = out.empty() ? nullptr : out.data();
  b.size = out.size();
  b.more = more;
  lowest(to).expires_after(idle_timeout);
  auto [ec, n] = co_await http::async_write(to, sr, use_tuple);
  out.clear();
  if (ec == http::error::need_buffer) ec = {};
  co_return ec;
}

struct redacted_relay_result {
  relay_result relay;
  std::uint64_t bytes_to_client = 0;
  bool cut_off = false;
  const char* decode_error = nullptr;  // the upstream body could not be decoded
};

// relay_body for a body that is redacted on the way: each piece read from upstream goes
// through `body` (decode, redact, encode) and whatever it releases is written to the client
// as a chunk at once (with the head, when that has not been written yet).
template <class ReadStream, class WriteStream>
asio::awaitable<redacted_relay_result> relay_redacted(
    worker& w, ReadStream& from, beast::flat_buffer& from_buffer,
    http::response_parser<http::buffer_body>& parser, WriteStream& to,
    http::response_serializer<http::buffer_body>& sr, std::chrono::milliseconds idle_timeout,
    const byte_throttle& throttle, filters::redaction::response_body& body) {
  redacted_relay_result result;
  auto buf = w.borrow_buffer();
  const std::size_t piece = throttle ? std::min(buf.size(), throttle.max_read) : buf.size();
  if (!parser.is_done()) from_buffer.reserve(relay_buffer_size);
  std::string out;
  // The parser and the serializer share the message's body: the parser reads into `buf`, the
  // serializer writes from `out`.
  auto& b = parser.get().body();
  while (!parser.is_done() && !body.cut_off()) {
    b.data = buf.data();
    b.size = piece;
    lowest(from).expires_after(idle_timeout);
    auto [ec, n] = co_await http::async_read_some(from, from_buffer, parser, use_tuple);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      result.relay.read_ec = ec;
      co_return result;
    }
    const std::size_t got = piece - b.size;
    if (got == 0) continue;
    if (throttle) co_await throttle.pace(got);
    result.relay.bytes += got;
    if (!body.write(std::string_view(buf.data(), got), out)) {
      result.decode_error = body.error();
      co_return result;
    }
    // When the body is complete, what is left goes out with the end of it, in one write.
    if (out.empty() || parser.is_done()) continue;
    result.bytes_to_client += out.size();
    result.relay.write_ec = co_await write_body_piece(to, sr, b, out, true, idle_timeout);
    if (result.relay.write_ec) co_return result;
  }
  result.cut_off = body.cut_off();
  if (!body.finish(out)) {
    result.decode_error = body.error();
    co_return result;
  }
  result.bytes_to_client += out.size();
  result.relay.write_ec = co_await write_body_piece(to, sr, b, out, false, idle_timeout);
  co_return result;
}

// Sends the (already rewritten) request head and body upstream and relays the response
// back. Any answer of the proxy's own is sent here; the exchange record is filled in.
template <class Client, class Upstream>
asio::awaitable<forward_result> forward(session_context& s, Client& client,
                                        beast::flat_buffer& client_buffer, Upstream& upstream,
                                        beast::flat_buffer& up_buffer,
                                        http::request_parser<http::buffer_body>& req_p,
                                        exchange_record& rec, const policy::model::limits& limits,
                                        const forward_params& fp) {
  forward_result out;
  auto& req = req_p.get();
  const unsigned version = fp.version;

  http::request_serializer<http::buffer_body> req_sr{req};
  if (fp.expect_continue && version >= 11) {
    // The client waits for this before it sends the body.
    if (co_await send_continue(client, limits.idle_timeout)) co_return out;
  }
  if (fp.body) {
    auto& b = req.body();
    b.data = fp.body->empty() ? nullptr : const_cast<char*>(fp.body->data());
    b.size = fp.body->size();
    b.more = false;
    co_await fp.upload.pace(fp.body->size());
    lowest(upstream).expires_after(limits.idle_timeout);
    auto [wec, wn] = co_await http::async_write(upstream, req_sr, use_tuple);
    if (wec == http::error::need_buffer) wec = {};
    rec.bytes_in = fp.body->size();
    if (wec) {
      rec.failed_upstream(errc::upstream_error);
      rec.refuse(errc::upstream_error, core::str_cat("sending request: ", wec.message()));
      co_await send_answer(client, rec, version, false);
      co_return out;
    }
  } else {
    auto body = co_await relay_body(s.w, client, client_buffer, req_p, upstream, req_sr,
                                    limits.idle_timeout, fp.upload, fp.body_scan);
    rec.bytes_in = body.bytes;
    if (body.placeholder != filters::credentials::placeholder_scanner::none) {
      // The origin holds a partial request and is dropped; the client learns why.
      refuse_placeholder(rec, fp.secrets[body.placeholder], *fp.target);
      co_await send_answer(client, rec, version, false);
      co_return out;
    }
    if (body.read_ec) {
      // The origin holds a partial request: the connection is dropped, never completed.
      if (body.read_ec == http::error::body_limit) {
        {
          rec.refuse(errc::body_too_large, core::str_cat("limit is ", limits.body_bytes, " bytes"));
          co_await send_answer(client, rec, version, false);
        }
      } else {
        {
          rec.refuse(errc::bad_request,
                     core::str_cat("reading request body: ", body.read_ec.message()));
          co_await send_answer(client, rec, version, false);
        }
      }
      co_return out;
    }
    if (body.write_ec) {
      rec.failed_upstream(errc::upstream_error);
      {
        rec.refuse(errc::upstream_error,
                   core::str_cat("sending request body: ", body.write_ec.message()));
        co_await send_answer(client, rec, version, false);
      }
      co_return out;
    }
  }

  // Response head; interim 1xx answers other than 101 are dropped (we removed Expect).
  std::optional<http::response_parser<http::buffer_body>> res_p;
  for (;;) {
    res_p.emplace();
    res_p->header_limit(header_limit(limits));
    res_p->body_limit(limits.response_bytes);
    if (fp.head) res_p->skip(true);
    lowest(upstream).expires_after(limits.response_timeout);
    auto [ec, n] = co_await http::async_read_header(upstream, up_buffer, *res_p, use_tuple);
    if (ec && fp.retry_if_stale && up_buffer.size() == 0 &&
        (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::eof)) {
      // The origin closed the idle connection as we reused it (a race no check can close).
      out.stale_connection = true;
      co_return out;
    }
    if (ec) {
      errc why = ec == beast::error::timeout     ? errc::upstream_timeout
                 : ec == http::error::body_limit ? errc::response_too_large
                                                 : errc::upstream_error;
      rec.failed_upstream(why);
      {
        rec.refuse(why, core::str_cat("reading response: ", ec.message()));
        co_await send_answer(client, rec, version, false);
      }
      co_return out;
    }
    auto status = res_p->get().result_int();
    if (status >= 100 && status < 200 && status != 101) continue;
    break;
  }
  auto& res = res_p->get();
  const unsigned status = res.result_int();
  rec.status = status;

  if (status == 101) {
    // An upgraded stream cannot be redacted: under redaction, switching protocols fails closed.
    if (fp.upgrade.empty() || fp.redaction) {
      rec.failed_upstream(errc::upstream_error);
      {
        rec.refuse(errc::upstream_error, "origin switched protocols without an allowed upgrade");
        co_await send_answer(client, rec, version, false);
      }
      co_return out;
    }
    // Pass the 101 on and become a tunnel for the upgraded protocol.
    strip_hop_by_hop(res);
    res.set(http::field::connection, "upgrade");
    res.set(http::field::upgrade, fp.upgrade);
    http::response_serializer<http::buffer_body> sr{res};
    lowest(client).expires_after(limits.idle_timeout);
    auto [wec, wn] = co_await http::async_write_header(client, sr, use_tuple);
    if (wec) co_return out;
    // Bytes already buffered past the heads belong to the new protocol.
    if (client_buffer.size() > 0) {
      auto [e1, n1] = co_await asio::async_write(upstream, client_buffer.data(), use_tuple);
      client_buffer.consume(client_buffer.size());
      if (e1) co_return out;
    }
    if (up_buffer.size() > 0) {
      auto [e2, n2] = co_await asio::async_write(client, up_buffer.data(), use_tuple);
      up_buffer.consume(up_buffer.size());
      if (e2) co_return out;
    }
    lowest(client).expires_never();
    lowest(upstream).expires_never();
    auto totals = co_await splice(client, upstream, limits.idle_timeout, fp.upload, fp.download);
    rec.bytes_in += totals.client_to_upstream;
    rec.bytes_out += totals.upstream_to_client;
    co_return out;
  }

  const bool upstream_keep_alive = res_p->keep_alive();
  strip_hop_by_hop(res);
  const bool no_body = fp.head || status == 204 || status == 304;
  bool keep_alive = fp.client_keep_alive && !s.w.shared().draining.load();

  // Redaction: header values now; a text body as it streams (its length changes, so it is
  // re-framed like a close-delimited one). A body the proxy cannot read is not passed.
  std::optional<filters::redaction::response_body> redacted_body;
  filters::redaction::hit_counts header_hits;
  if (fp.redaction) {
    redact_header_values(*fp.redaction, res, header_hits);
    rec.redactions = fp.redaction->named(header_hits);
    if (!no_body) {
      auto plan = filters::redaction::plan_response(res[http::field::content_type],
                                                    res[http::field::content_encoding]);
      if (plan.treatment == filters::redaction::body_treatment::refuse) {
        rec.failed_upstream(errc::unredactable_response);
        rec.refuse(
            errc::unredactable_response,
            core::str_cat("rule ", fp.rule_name, " redacts responses; this one is in ", plan.why));
        co_await send_answer(client, rec, version, false);
        co_return out;
      }
      if (plan.treatment == filters::redaction::body_treatment::pass && fp.binary_guard) {
        redacted_body.emplace(fp.binary_guard, plan, 0, std::string());
      } else if (plan.treatment == filters::redaction::body_treatment::redact) {
        redacted_body.emplace(
            fp.redaction, plan, fp.redact_max_bytes,
            core::str_cat("\n[airlock: response cut off after ", fp.redact_max_bytes,
                          " bytes by rule ", fp.rule_name, "]\n"));
        res.erase(http::field::content_length);
      }
    }
  }
  // A redacted (not merely guarded) body changes length: it is re-framed.
  const bool reframed = redacted_body && !redacted_body->guarding();
  if (!no_body && (reframed || (!res_p->chunked() && !res_p->content_length()))) {
    // Close-delimited (or redacted) response: re-frame as chunked for HTTP/1.1 clients, else
    // close.
    if (version >= 11) {
      res.chunked(true);
    } else {
      res.chunked(false);
      keep_alive = false;
    }
  }
  res.version(version >= 11 ? 11 : 10);
  res.keep_alive(keep_alive);

  http::response_serializer<http::buffer_body> res_sr{res};
  // A redacted body may be held back a while (the overlap): its head goes first unless the
  // whole body is already here.
  const bool whole_body_here =
      res_p->content_length() && up_buffer.size() >= *res_p->content_length();
  if (no_body ||
      (!res_p->is_done() && (redacted_body ? !whole_body_here : up_buffer.size() == 0))) {
    // Nothing of the body is here yet (or there is none): send the head now, so a client of
    // a slow stream sees it at once.
    lowest(client).expires_after(limits.idle_timeout);
    auto [wh_ec, wh_n] = co_await http::async_write_header(client, res_sr, use_tuple);
    if (wh_ec) co_return out;
  }
  if (!no_body && redacted_body) {
    auto body = co_await relay_redacted(s.w, upstream, up_buffer, *res_p, client, res_sr,
                                        limits.idle_timeout, fp.download, *redacted_body);
    rec.bytes_out = body.bytes_to_client;
    auto hits = redacted_body->redaction().hits();
    hits.resize(std::max(hits.size(), header_hits.size()));
    for (std::size_t i = 0; i < header_hits.size(); ++i)
      hits[i] += header_hits[i];
    rec.redactions = fp.redaction->named(hits);
    if (body.relay.read_ec) {
      rec.failed_upstream(body.relay.read_ec == http::error::body_limit ? errc::response_too_large
                                                                        : errc::upstream_error);
      rec.detail = core::str_cat("response body: ", body.relay.read_ec.message());
      co_return out;
    }
    if (body.decode_error) {
      // Cut off: the client sees an incomplete response, never the rest of it.
      rec.failed_upstream(redacted_body->guarding() ? errc::unredactable_response
                                                    : errc::upstream_error);
      rec.detail = core::str_cat("response body cut off: ", body.decode_error);
      AIRLOCK_LOG(warn, "proxy", rec.agent, ' ', rec.method, ' ', rec.host, rec.path, ": ",
                  rec.detail);
      // Nothing sent yet (the whole body was here with its head): the agent gets a 502 that
      // says why instead of a closed connection.
      if (!res_sr.is_header_done()) co_await send_answer(client, rec, version, false);
      co_return out;
    }
    if (body.relay.write_ec) co_return out;
    if (body.cut_off) {
      rec.detail = core::str_cat("response cut off after ", fp.redact_max_bytes,
                                 " bytes of text (rule ", fp.rule_name, " redacts at most that)");
      AIRLOCK_LOG(warn, "proxy", rec.agent, ' ', rec.method, ' ', rec.host, rec.path, ": ",
                  rec.detail);
    }
  } else if (!no_body) {
    auto body = co_await relay_body(s.w, upstream, up_buffer, *res_p, client, res_sr,
                                    limits.idle_timeout, fp.download);
    rec.bytes_out = body.bytes;
    if (body.read_ec) {
      // Cut off: the client sees an incomplete response (the connection closes before the
      // declared length or the final chunk), never a truncated one that looks whole.
      rec.failed_upstream(body.read_ec == http::error::body_limit ? errc::response_too_large
                                                                  : errc::upstream_error);
      rec.detail = core::str_cat("response body: ", body.read_ec.message());
      co_return out;
    }
    if (body.write_ec) co_return out;
  }
  out.client_continues = keep_alive;
  out.upstream_reusable = upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0;
  co_return out;
}

// Connects (or reconnects) the TLS upstream of an intercepted tunnel: TCP through the
// address guard, then a handshake that verifies the origin's certificate for the CONNECT
// name. On failure the tunnel's upstream is empty and the outcome says why.
asio::awaitable<connect_outcome> connect_tls_upstream(session_context& s, tunnel_context& t,
                                                      const policy::snapshot& snap,
                                                      const policy::compiled_rule& rule) {
  const auto& limits = snap.limits();
  t.upstream.emplace(s.client.get_executor(), *t.tls->client_context);
  t.upstream_buffer.clear();
  auto ur = upstream_for(t.target, rule, limits);
  auto outcome = co_await connect_upstream(t.upstream->next_layer(), snap.guard(), ur);
  if (outcome.error != errc::ok) {
    t.upstream.reset();
    co_return outcome;
  }
  std::string error;
  if (!tls::set_upstream_host(t.upstream->native_handle(), t.target.host.text, error)) {
    t.upstream.reset();
    outcome.error = errc::upstream_tls_failed;
    outcome.detail = error;
    co_return outcome;
  }
  // A session from an earlier verified handshake with this name saves the full handshake.
  t.tls->upstream_sessions->resume(t.upstream->native_handle());
  auto started = std::chrono::steady_clock::now();
  lowest(*t.upstream).expires_after(limits.connect_timeout);
  auto [ec] = co_await t.upstream->async_handshake(ssl::stream_base::client, use_tuple);
  if (ec) {
    outcome.error = ec == beast::error::timeout ? errc::connect_timeout : errc::upstream_tls_failed;
    outcome.detail = core::str_cat("TLS to ", t.target.host.text, ": ",
                                   tls::handshake_failure_reason(t.upstream->native_handle(), ec));
    t.upstream.reset();
    co_return outcome;
  }
  if (auto* m = s.w.shared().metrics)
    m->upstream_tls_time(std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started));
  t.upstream_text = to_string(outcome.endpoint);
  co_return outcome;
}

// One request/response exchange: on a plain client connection (tunnel == nullptr, targets
// in absolute form) or inside an intercepted tunnel (origin-form targets for the CONNECT
// host). Returns whether the client connection may carry another request.
template <class Client>
asio::awaitable<bool> serve_one(session_context& s, Client& client, tunnel_context* tunnel) {
  auto& shared = s.w.shared();
  // The policy and its rate-limit state, held together for the whole exchange.
  const auto active = shared.current_active();
  const auto& snap = active->snapshot;
  const auto& rates = *active->rates;
  const auto& limits = snap->limits();
  auto& buffer = s.buffer;

  // A new connection must send its first head within head_timeout; a kept-alive one may idle.
  const auto first_byte_timeout = s.requests == 0 ? limits.head_timeout : limits.idle_timeout;
  if (!co_await wait_for_request(client, buffer, first_byte_timeout)) co_return false;
  ++s.requests;
  s.entry->idle = false;

  exchange_record rec(s.w, s.client_text, snap->version());
  if (tunnel) rec.scheme = "https";
  http::request_parser<http::buffer_body> req_p;
  req_p.header_limit(header_limit(limits));
  // The body limit is checked by hand once the target is known (so the refusal is recorded
  // with its host and path), then enforced by the parser while the body streams.
  req_p.body_limit(boost::none);
  lowest(client).expires_after(limits.head_timeout);
  auto [rec_ec, rec_n] = co_await http::async_read_header(client, buffer, req_p, use_tuple);
  if (rec_ec) {
    if ((rec_ec == http::error::end_of_stream || rec_ec == ssl::error::stream_truncated) &&
        buffer.size() == 0) {
      rec.skip();
      co_return false;
    }
    if (rec_ec == beast::error::timeout) {
      // The timeout closed the socket; nothing can be sent. Record it and drop the client.
      rec.reason = errc::head_timeout;
      rec.status = 408;
      rec.detail = "request head not complete in time";
      co_return false;
    }
    if (rec_ec == http::error::header_limit) {
      rec.refuse(errc::header_too_large, core::str_cat("limit is ", limits.header_bytes, " bytes"));
      co_return co_await send_answer(client, rec, 11, false);
    }
    if (rec_ec == http::error::body_limit) {
      rec.refuse(errc::body_too_large, core::str_cat("limit is ", limits.body_bytes, " bytes"));
      co_return co_await send_answer(client, rec, 11, false);
    }
    {
      rec.refuse(errc::bad_request, rec_ec.message());
      co_return co_await send_answer(client, rec, 11, false);
    }
  }

  auto& req = req_p.get();
  const unsigned version = req.version();
  if (shared.draining.load()) {
    // Shutting down: nothing new starts, even on a connection accepted just before.
    rec.refuse(errc::shutting_down, "proxy is shutting down; retry");
    co_return co_await send_answer(client, rec, version, false);
  }
  rec.method = std::string(req.method_string());
  const bool has_body = req_p.chunked() || req_p.content_length().value_or(0) > 0;
  // A refused request whose body we have not read ends the connection: without reading the
  // body (which we will not forward) we cannot know where the next request starts.
  const bool keep_after_refusal = !has_body && req.keep_alive() && !shared.draining.load();

  std::size_t field_count = 0;
  for ([[maybe_unused]] const auto& f : req)
    ++field_count;
  if (field_count > limits.header_count) {
    rec.refuse(errc::header_too_large,
               core::str_cat("more than ", limits.header_count, " headers"));
    co_return co_await send_answer(client, rec, version, false);
  }
  if (auto problem = framing_problem(req_p); !problem.empty()) {
    rec.refuse(errc::bad_request, problem);
    co_return co_await send_answer(client, rec, version, false);
  }

  // The target: CONNECT host:port or an absolute http:// URL at the proxy port; inside an
  // intercepted tunnel, an origin-form path for the CONNECT host.
  const bool is_connect = req.method() == http::verb::connect;
  std::optional<net::authority> authority;
  std::string path_and_query;
  std::string_view target = req.target();
  if (tunnel) {
    if (is_connect || target.empty() || target.front() != '/') {
      rec.refuse(errc::bad_request, "inside a tunnel only origin-form requests are allowed");
      co_return co_await send_answer(client, rec, version, false);
    }
    authority = tunnel->target;
    path_and_query = std::string(target);
  } else if (is_connect) {
    rec.scheme = "connect";
    authority = net::parse_authority(target, 0, true);
    if (!authority) {
      // bad_port only when the host part is fine and the port is what is wrong.
      auto colon = target.rfind(':');
      auto host_part = colon == std::string_view::npos ? target : target.substr(0, colon);
      if (host_part.size() > 2 && host_part.front() == '[' && host_part.back() == ']')
        host_part = host_part.substr(1, host_part.size() - 2);
      bool port_problem = target.find_first_of("/@") == std::string_view::npos &&
                          net::normalize_host(host_part).has_value();
      {
        rec.refuse(port_problem ? errc::bad_port : errc::bad_request,
                   "CONNECT needs host:port (a name or IP literal and a port from 1 to 65535, "
                   "nothing else)");
        co_return co_await send_answer(client, rec, version, false);
      }
    }
  } else if (!target.empty() && target.front() == '/') {
    {
      rec.refuse(errc::origin_form, "send the absolute URL (http://host/path) to the proxy");
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
  } else {
    auto url = net::parse_http_url(target);
    if (!url) {
      auto scheme_end = target.find("://");
      bool other_scheme =
          scheme_end != std::string_view::npos && !iequals(target.substr(0, scheme_end), "http");
      if (other_scheme) {
        rec.refuse(
            errc::unsupported_scheme,
            core::str_cat("scheme '", target.substr(0, std::min<std::size_t>(scheme_end, 20)),
                          "' is not proxied; use CONNECT for https"));
      } else if (has_bad_port(target)) {
        rec.refuse(errc::bad_port, "port must be a number from 1 to 65535");
      } else {
        rec.refuse(errc::bad_request, "malformed request target");
      }
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
    authority = url->target;
    path_and_query = std::move(url->path_and_query);
  }
  rec.host = authority->host.text;
  rec.port = authority->port;
  std::string_view path = path_and_query;
  path = path.substr(0, path.find('?'));
  rec.path = std::string(path);
  if (req_p.content_length().value_or(0) > limits.body_bytes) {
    rec.refuse(errc::body_too_large, core::str_cat("limit is ", limits.body_bytes, " bytes"));
    co_return co_await send_answer(client, rec, version, false);
  }
  req_p.body_limit(limits.body_bytes);

  // Who is asking. Inside a tunnel the agent is the one that opened it.
  const policy::compiled_agent* agent = nullptr;
  if (tunnel) {
    agent = snap->find_agent(tunnel->agent);
    if (!agent) {
      rec.refuse(errc::auth_required, "agent no longer in the policy");
      co_return co_await send_answer(client, rec, version, false);
    }
  } else {
    // A relay connection is the agent the launcher named, whatever the request says about
    // itself (Proxy-Authorization included); otherwise credentials, then source address.
    auto id = snap->identify(s.relay_agent, req[http::field::proxy_authorization],
                             s.client_endpoint.address());
    if (!id.agent) {
      rec.refuse(errc::auth_required, id.detail);
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
    agent = id.agent;
  }
  rec.agent = agent->name;
  // From here on a refusal or upstream error counts towards the agent's circuit breaker.
  const std::size_t agent_index = rates.agent_index(*agent);
  rec.controls = &rates;
  rec.agent_index = agent_index;

  // Placeholders of secrets: swapped for the value only on the hosts the secret is bound to;
  // anywhere else they are an exfiltration attempt, refused whatever the rules say.
  std::vector<std::size_t> placeholders;
  const auto secrets = snap->secrets();
  const bool any_placeholder = filters::credentials::any_placeholder(secrets);
  if (any_placeholder) {
    placeholders = filters::credentials::find_placeholders(secrets, req, req.target());
    for (std::size_t i : placeholders) {
      if (secrets[i].bound_to(authority->host)) continue;
      refuse_placeholder(rec, secrets[i], *authority);
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
  }

  // What the policy says.
  std::string upgrade = requested_upgrade(req);
  policy::request_target pt;
  pt.method = req.method_string();
  pt.host = &authority->host;
  pt.port = authority->port;
  pt.path = path;
  pt.upgrade = upgrade;
  pt.is_connect = is_connect;
  auto decision = snap->decide(*agent, pt);
  if (decision.rule) rec.rule = decision.rule->name;
  if (!decision.allowed()) {
    rec.refuse(decision.reason, decision.detail);
    co_return co_await send_answer(client, rec, version, keep_after_refusal);
  }
  if (decision.report_only) rec.report(decision.reason, decision.detail);
  const auto* rule = decision.rule;
  const bool report_rule = rule->mode == policy::model::mode::report;

  // Rate limits, quotas, concurrency caps, the circuit breaker and the kill switch. An
  // intercepted tunnel holds the concurrency slots; the requests inside it are what is rated.
  const std::size_t rule_position = rates.rule_position(agent_index, rule);
  using slots = filters::rate_limit::plan::slots;
  const slots slot_use = tunnel                        ? slots::skip
                         : is_connect && rule->inspect ? slots::only
                                                       : slots::take;
  auto admission = rates.admit(agent_index, rule_position, steady_now_ns(), slot_use);
  if (!admission) {
    if (report_rule && admission.error != errc::agent_stopped &&
        admission.error != errc::internal_error) {
      rec.report(admission.error, admission.limit);
    } else {
      rec.retry_after = admission.retry_after_seconds;
      rec.refuse(admission.error, admission.limit);
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
  }
  const auto upload = byte_throttle::for_exchange(rates, agent_index, rule_position,
                                                  filters::rate_limit::direction::upload);
  const auto download = byte_throttle::for_exchange(rates, agent_index, rule_position,
                                                    filters::rate_limit::direction::download);

  if (is_connect) {
    co_await handle_connect(s, rec, snap, decision, *authority, version, upload, download);
    co_return false;
  }

  // A rule may insist on a placeholder (the agent's tool must be the one it was handed).
  for (std::size_t i : rule->inject.require) {
    if (std::find(placeholders.begin(), placeholders.end(), i) != placeholders.end()) continue;
    rec.refuse(errc::placeholder_required,
               core::str_cat("rule ", rule->name, " requires the placeholder of secret ",
                             secrets[i].name));
    co_return co_await send_answer(client, rec, version, keep_after_refusal);
  }

  // Parameter validation: query, headers, then (when the rule constrains it) the body.
  const auto& checks = rule->checks;
  std::optional<filters::validation::violation> violation;
  if (checks.query.active) {
    const auto q = std::string_view(path_and_query).find('?');
    const std::string_view raw = q == std::string_view::npos
                                     ? std::string_view{}
                                     : std::string_view(path_and_query).substr(q + 1);
    std::optional<std::string> rewritten;
    violation = filters::validation::check_query(checks.query, raw, rewritten);
    if (!violation && rewritten) {
      // Unknown parameters stripped: the origin sees the others, as they were written.
      std::string stripped = path_and_query.substr(0, q);
      if (!rewritten->empty()) stripped += core::str_cat("?", *rewritten);
      path_and_query = std::move(stripped);
    }
  }
  if (!violation && checks.headers.any())
    violation = filters::validation::check_headers(checks.headers, req);
  std::uint64_t body_limit = limits.body_bytes;
  if (checks.body.max_bytes && *checks.body.max_bytes < body_limit) {
    body_limit = *checks.body.max_bytes;
    if (!violation && req_p.content_length().value_or(0) > body_limit) {
      rec.refuse(errc::body_too_large,
                 core::str_cat("rule ", rule->name, " allows ", body_limit, " bytes of body"));
      co_return co_await send_answer(client, rec, version, false);
    }
    req_p.body_limit(body_limit);
  }
  if (violation) {
    if (report_rule) {
      rec.report(violation->reason, violation->detail());
    } else {
      rec.refuse(violation->reason, violation->detail());
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
  }
  // A placeholder in the body, bound for a host its secret is not bound to, is refused too.
  std::optional<filters::credentials::placeholder_scanner> body_scan;
  if (has_body && any_placeholder) {
    body_scan.emplace(secrets, authority->host);
    if (!body_scan->active()) body_scan.reset();
  }
  // A body the rule checks is read whole first (at most body_limit bytes), then forwarded:
  // nothing of it reaches the origin unless all of it passes.
  std::optional<std::string> held_body;
  const bool expect_continue = iequals(trim_ows(req[http::field::expect]), "100-continue");
  if (checks.needs_body()) {
    held_body.emplace();
    if (expect_continue && version >= 11 && has_body) {
      if (co_await send_continue(client, limits.idle_timeout)) co_return false;
    }
    auto read_ec = co_await read_whole_body(client, buffer, req_p, *held_body, limits.idle_timeout);
    rec.bytes_in = held_body->size();
    if (read_ec == http::error::body_limit) {
      rec.refuse(errc::body_too_large,
                 core::str_cat("rule ", rule->name, " allows ", body_limit, " bytes of body"));
      co_return co_await send_answer(client, rec, version, false);
    }
    if (read_ec) {
      rec.refuse(errc::bad_request, core::str_cat("reading request body: ", read_ec.message()));
      co_return co_await send_answer(client, rec, version, false);
    }
    if (body_scan) {
      if (auto hit = body_scan->scan(*held_body);
          hit != filters::credentials::placeholder_scanner::none) {
        refuse_placeholder(rec, secrets[hit], *authority);
        co_return co_await send_answer(client, rec, version, false);
      }
    }
    violation = filters::validation::check_json(checks.body, *held_body);
    if (violation) {
      if (report_rule) {
        rec.report(violation->reason, violation->detail());
      } else {
        rec.refuse(violation->reason, violation->detail());
        co_return co_await send_answer(client, rec, version, req.keep_alive());
      }
    }
    req.content_length(held_body->size());
  }

  // Credentials: placeholders swapped for their values, then the rule's own injected (the
  // agent's values of those headers and parameters removed first). Either way, what comes back
  // is redacted of every secret.
  filters::credentials::swap_placeholders(secrets, placeholders, req, path_and_query);
  for (std::size_t i : placeholders)
    rec.injected.push_back(secrets[i].name);
  if (rule->inject.active) {
    auto injected = filters::credentials::apply_injection(rule->inject, secrets, authority->host,
                                                          req, path_and_query);
    if (injected.error != errc::ok) {
      rec.refuse(injected.error, std::move(injected.detail));
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
    for (std::size_t i : rule->inject.secrets)
      if (std::find(placeholders.begin(), placeholders.end(), i) == placeholders.end())
        rec.injected.push_back(secrets[i].name);
  }
  auto redaction = active->redaction->for_rule(rule->index);
  auto binary_guard = active->redaction->for_binary(rule->index);
  if (!redaction && !placeholders.empty())
    redaction = binary_guard = active->redaction->secrets_only();
  if (redaction) narrow_accept_encoding(req);

  // Rewrite the head in place: origin-form target, Host from the target, no hop-by-hop
  // headers; 100-continue is answered by us once the request is on its way.
  forward_params fp;
  fp.redaction = std::move(redaction);
  fp.binary_guard = std::move(binary_guard);
  fp.redact_max_bytes = rule->redact.active ? rule->redact.max_bytes : limits.response_bytes;
  fp.rule_name = rule->name;
  fp.body_scan = body_scan && !held_body ? &*body_scan : nullptr;
  fp.secrets = secrets;
  fp.target = &*authority;
  fp.body = held_body ? &*held_body : nullptr;
  fp.upload = upload;
  fp.download = download;
  fp.version = version;
  fp.has_body = has_body;
  fp.client_keep_alive = req.keep_alive();
  fp.expect_continue = expect_continue && !held_body;
  fp.head = req.method() == http::verb::head;
  strip_hop_by_hop(req);
  if (!upgrade.empty() && std::find(rule->upgrades.begin(), rule->upgrades.end(),
                                    upgrade.substr(0, upgrade.find('/'))) != rule->upgrades.end()) {
    fp.upgrade = upgrade;
    req.set(http::field::connection, "upgrade");
    req.set(http::field::upgrade, upgrade);
  }
  if (expect_continue) req.erase(http::field::expect);
  req.target(path_and_query);
  req.set(http::field::host, host_header(authority->host, authority->port, tunnel ? 443 : 80));
  req.version(11);
  req.keep_alive(true);

  if (tunnel) {
    // The tunnel's TLS upstream, (re)connected when needed.
    if (!tunnel->upstream) {
      auto outcome = co_await connect_tls_upstream(s, *tunnel, *snap, *rule);
      if (outcome.error != errc::ok) {
        rec.connect_failed(outcome.error);
        {
          rec.refuse(outcome.error, outcome.detail);
          co_return co_await send_answer(client, rec, version, keep_after_refusal);
        }
      }
      rec.connect_time = outcome.connect_time;
    }
    rec.upstream = tunnel->upstream_text;
    s.entry->upstream = &lowest(*tunnel->upstream).socket();
    auto result = co_await forward(s, client, buffer, *tunnel->upstream, tunnel->upstream_buffer,
                                   req_p, rec, limits, fp);
    s.entry->upstream = nullptr;
    if (!result.upstream_reusable) tunnel->upstream.reset();
    co_return result.client_continues;
  }

  // Plain HTTP: reuse an idle pooled connection to the same host:port when its address still
  // passes the guard (and the rule's pins), else resolve, guard and connect.
  beast::tcp_stream upstream(s.client.get_executor());
  std::string pool_key = core::str_cat(authority->host.text, ':', authority->port);
  bool reused = false;
  if (auto pooled = s.w.pool().take(pool_key)) {
    boost::system::error_code ep_ec;
    auto ep = pooled->remote_endpoint(ep_ec);
    bool pinned_ok = rule->pinned.empty() || std::find(rule->pinned.begin(), rule->pinned.end(),
                                                       ep.address()) != rule->pinned.end();
    if (!ep_ec && pinned_ok &&
        snap->guard().check(ep.address(), ep.port(), rule->allow_cidrs).allowed) {
      upstream.socket() = std::move(*pooled);
      rec.upstream = to_string(ep);
      reused = true;
    }
  }
  if (shared.metrics) shared.metrics->pool_reuse(reused);
  if (!reused) {
    auto ur = upstream_for(*authority, *rule, limits);
    auto outcome = co_await connect_upstream(upstream, snap->guard(), ur);
    if (outcome.error != errc::ok) {
      rec.connect_failed(outcome.error);
      {
        rec.refuse(outcome.error, outcome.detail);
        co_return co_await send_answer(client, rec, version, keep_after_refusal);
      }
    }
    rec.upstream = to_string(outcome.endpoint);
    rec.connect_time = outcome.connect_time;
  }
  s.entry->upstream = &upstream.socket();
  beast::flat_buffer up_buffer;
  fp.retry_if_stale = reused && !has_body;
  auto result = co_await forward(s, client, buffer, upstream, up_buffer, req_p, rec, limits, fp);
  if (result.stale_connection) {
    upstream.close();
    auto ur = upstream_for(*authority, *rule, limits);
    auto outcome = co_await connect_upstream(upstream, snap->guard(), ur);
    if (outcome.error != errc::ok) {
      rec.connect_failed(outcome.error);
      rec.refuse(outcome.error, outcome.detail);
      s.entry->upstream = nullptr;
      co_return co_await send_answer(client, rec, version, keep_after_refusal);
    }
    rec.upstream = to_string(outcome.endpoint);
    fp.retry_if_stale = false;
    up_buffer.clear();
    result = co_await forward(s, client, buffer, upstream, up_buffer, req_p, rec, limits, fp);
  }
  s.entry->upstream = nullptr;
  if (result.upstream_reusable && !shared.draining.load()) {
    upstream.expires_never();
    s.w.pool().put(pool_key, std::move(upstream.socket()));
  }
  co_return result.client_continues;
}

// After the TLS handshake with the client: serve the decrypted requests one by one.
asio::awaitable<void> serve_intercepted(session_context& s, exchange_record& rec,
                                        tunnel_context& t) {
  ssl::stream<beast::tcp_stream&> client_tls(s.client, *t.tls->server_context);
  std::string error;
  auto leaf = t.tls->leaves->get(t.target.host.text, error);
  if (!leaf || !tls::use_leaf(client_tls.native_handle(), *leaf, error)) {
    rec.reason = errc::internal_error;
    rec.detail = core::str_cat("cannot mint a certificate: ", error);
    co_return;
  }
  // The ClientHello we already read for the SNI check is handed to the handshake.
  lowest(client_tls).expires_after(s.w.shared().current()->limits().head_timeout);
  auto [ec, used] =
      co_await client_tls.async_handshake(ssl::stream_base::server, s.buffer.data(), use_tuple);
  s.buffer.consume(used);
  if (ec) {
    // Most often: the client does not trust our CA. Nothing more can be said to it.
    rec.reason = errc::bad_request;
    rec.detail = core::str_cat("client TLS handshake failed: ",
                               tls::handshake_failure_reason(client_tls.native_handle(), ec));
    co_return;
  }
  rec.skip();  // each inner request gets its own record from here on
  for (;;) {
    s.entry->idle = true;
    if (s.w.shared().draining.load()) break;
    if (!co_await serve_one(s, client_tls, &t)) break;
  }
  lowest(client_tls).expires_after(std::chrono::seconds(2));
  co_await client_tls.async_shutdown(use_tuple);
}

// After the request line: connect (refusing with an HTTP answer when that fails), send 200,
// then the first bytes must be a TLS ClientHello whose SNI names the CONNECT host (an
// IP-literal target may omit SNI, and may carry non-TLS traffic since there is no name to
// check). Then either relay the bytes opaquely, or, for an `inspect` rule, intercept.
asio::awaitable<void> handle_connect(session_context& s, exchange_record& rec,
                                     const std::shared_ptr<const policy::snapshot>& snap,
                                     const policy::decision& decision, const net::authority& target,
                                     unsigned version, const byte_throttle& upload,
                                     const byte_throttle& download) {
  const auto& limits = snap->limits();
  const auto* rule = decision.rule;
  std::shared_ptr<const interception> tls_state;
  if (rule->inspect) {
    tls_state = s.w.shared().tls.load();
    if (!tls_state) {
      {
        rec.refuse(errc::internal_error, "rule inspects but no interception CA is loaded");
        co_await send_answer(s.client, rec, version, false);
      }
      co_return;
    }
  }
  beast::tcp_stream upstream(s.client.get_executor());
  auto ur = upstream_for(target, *rule, limits);
  auto outcome = co_await connect_upstream(upstream, snap->guard(), ur);
  if (outcome.error != errc::ok) {
    rec.connect_failed(outcome.error);
    {
      rec.refuse(outcome.error, outcome.detail);
      co_await send_answer(s.client, rec, version, false);
    }
    co_return;
  }
  rec.upstream = to_string(outcome.endpoint);
  rec.connect_time = outcome.connect_time;
  s.entry->upstream = &upstream.socket();
  struct detach_upstream {
    session_entry& e;
    ~detach_upstream() { e.upstream = nullptr; }
  } detach{*s.entry};

  static constexpr std::string_view established = "HTTP/1.1 200 Connection Established\r\n\r\n";
  s.client.expires_after(limits.idle_timeout);
  auto [wec, wn] =
      co_await asio::async_write(s.client.socket(), asio::buffer(established), use_tuple);
  if (wec) co_return;
  rec.status = 200;

  // Collect the ClientHello: it may arrive in pieces, and may already be in the buffer if the
  // client did not wait for our 200.
  net::client_hello hello;
  s.client.expires_after(limits.head_timeout);
  for (;;) {
    auto data = s.buffer.cdata();
    hello = net::parse_client_hello({static_cast<const std::uint8_t*>(data.data()), data.size()});
    if (hello.status != net::hello_status::need_more) break;
    if (s.buffer.size() >= net::max_client_hello_bytes) {
      hello.status = net::hello_status::malformed;
      break;
    }
    auto [ec, n] = co_await s.client.async_read_some(s.buffer.prepare(16 * 1024), use_tuple);
    s.buffer.commit(n);
    if (ec) {
      rec.reason = ec == beast::error::timeout ? errc::head_timeout : errc::bad_request;
      rec.detail = "client sent no TLS ClientHello";
      co_return;
    }
  }
  s.client.expires_never();

  errc refusal = errc::ok;
  std::string why;
  const bool name_based = !target.host.is_ip();
  if (hello.status == net::hello_status::complete) {
    if (!hello.server_name) {
      if (name_based) {
        refusal = errc::sni_mismatch;
        why = core::str_cat("CONNECT ", target.host.text, " sent no SNI");
      }
    } else {
      auto sni = net::normalize_host(*hello.server_name);
      if (!sni || sni->text != target.host.text) {
        refusal = errc::sni_mismatch;
        why = core::str_cat("CONNECT ", target.host.text, " but SNI ",
                            sni ? sni->text : std::string("(invalid)"));
      }
    }
  } else if (name_based || hello.status == net::hello_status::malformed || rule->inspect) {
    refusal = errc::not_tls;
    why = core::str_cat("CONNECT ", target.host.text, " did not start with a TLS ClientHello");
  }
  if (refusal != errc::ok) {
    if (rule->mode == policy::model::mode::report && !rule->inspect) {
      rec.report(refusal, why);
    } else {
      rec.reason = refusal;
      rec.detail = why;
      rec.status = 403;
      // A fatal unrecognized_name alert (RFC 6066 section 3) tells a TLS client plainly that
      // the name was refused.
      static constexpr std::array<std::uint8_t, 7> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112};
      if (hello.status == net::hello_status::complete)
        co_await asio::async_write(s.client.socket(), asio::buffer(alert), use_tuple);
      co_return;
    }
  }

  auto* metrics = s.w.shared().metrics;
  if (metrics) metrics->tunnel_opened();
  struct tunnel_gauge {
    telemetry::metrics* m;
    ~tunnel_gauge() {
      if (m) m->tunnel_closed();
    }
  } gauge{metrics};

  if (tls_state) {
    tunnel_context t;
    t.target = target;
    t.agent = rec.agent;
    t.tls = tls_state;
    // The TCP connection made above is the first upstream; TLS to it starts lazily with the
    // first allowed request. Simpler to drop it and let the first request connect.
    upstream.close();
    co_await serve_intercepted(s, rec, t);
    co_return;
  }

  // Opaque: forward what the client already sent, then relay.
  if (s.buffer.size() > 0) {
    auto [ec, n] = co_await asio::async_write(upstream.socket(), s.buffer.data(), use_tuple);
    rec.bytes_in += n;
    s.buffer.consume(s.buffer.size());
    if (ec) co_return;
  }
  auto totals =
      co_await splice(s.client.socket(), upstream.socket(), limits.idle_timeout, upload, download);
  rec.bytes_in += totals.client_to_upstream;
  rec.bytes_out += totals.upstream_to_client;
}

}  // namespace

namespace {

asio::awaitable<void> serve_connection(worker& w, tcp::socket socket, tcp::endpoint endpoint,
                                       std::string relay_agent) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // fails harmlessly on a Unix socket
  session_context s{w,        beast::tcp_stream(std::move(socket)),
                    endpoint, to_string(endpoint),
                    {},       {},
                    0,        std::move(relay_agent)};
  s.entry = w.add_session(&s.client.socket());
  struct unregister {
    worker& w;
    std::list<session_entry>::iterator it;
    ~unregister() { w.remove_session(it); }
  } guard{w, s.entry};

  auto* metrics = w.shared().metrics;
  if (metrics) metrics->connection_opened();
  for (;;) {
    s.entry->idle = true;
    if (w.shared().draining.load()) break;
    bool again = co_await serve_one(s, s.client, nullptr);
    if (!again) break;
    // Do not let an idle connection keep a large buffer alive.
    if (s.buffer.size() == 0 && s.buffer.capacity() > 16 * 1024) s.buffer.shrink_to_fit();
  }
  if (metrics) metrics->connection_closed();
  s.client.socket().shutdown(tcp::socket::shutdown_send, ec);
  s.client.close();
}

}  // namespace

asio::awaitable<void> run_session(worker& w, tcp::socket socket) {
  boost::system::error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) co_return;
  co_await serve_connection(w, std::move(socket), endpoint, std::string{});
}

asio::awaitable<void> run_relay_session(worker& w, tcp::socket socket) {
  // The header comes first and whole, within the head timeout; anything else ends the
  // connection without an answer (a relay that speaks wrongly is a configuration error, and
  // whoever else reached this socket learns nothing).
  const auto timeout = w.shared().current()->limits().head_timeout;
  beast::tcp_stream stream(std::move(socket));
  stream.expires_after(timeout);
  std::array<std::uint8_t, 16> fixed{};
  auto [ec, n] = co_await asio::async_read(stream, asio::buffer(fixed), use_tuple);
  if (ec) co_return;
  const std::size_t rest = static_cast<std::size_t>(fixed[14]) << 8 | fixed[15];
  std::vector<std::uint8_t> header(fixed.begin(), fixed.end());
  header.resize(fixed.size() + rest);
  if (rest > 0) {
    auto [ec2, n2] = co_await asio::async_read(
        stream, asio::buffer(header.data() + fixed.size(), rest), use_tuple);
    if (ec2) co_return;
  }
  const auto decoded = net::proxy_v2::decode(header);
  std::optional<std::string> agent;
  if (decoded && decoded->value.cmd == net::proxy_v2::command::proxy)
    agent = net::proxy_v2::agent_of(decoded->value);
  if (!agent || agent->empty()) {
    AIRLOCK_LOG(warn, "proxy", "relay connection without a valid PROXY v2 agent header: closed");
    co_return;
  }
  // The agent's own address inside its jail, for the audit record; loopback when absent.
  tcp::endpoint endpoint(asio::ip::address_v4::loopback(), 0);
  if (const auto& src = decoded->value.source) {
    if (src->v6) {
      asio::ip::address_v6::bytes_type b;
      std::copy(src->addr.begin(), src->addr.end(), b.begin());
      endpoint = tcp::endpoint(asio::ip::address_v6(b), src->port);
    } else {
      asio::ip::address_v4::bytes_type b;
      std::copy(src->addr.begin(), src->addr.begin() + 4, b.begin());
      endpoint = tcp::endpoint(asio::ip::address_v4(b), src->port);
    }
  }
  stream.expires_never();
  co_await serve_connection(w, stream.release_socket(), endpoint, std::move(*agent));
}

}  // namespace airlock::proxy
