#pragma once
// The HTTP/1.1 codec's request side: reads a request head with its limits (size, header count,
// time), refuses what smuggling needs (RFC 9112 section 6.3), and fills an exchange from it:
// the target (CONNECT host:port, an absolute http:// URL at the proxy port, or an origin-form
// path inside an intercepted tunnel), the path, the framing, the requested upgrade. Then, once
// the chain has passed the request, rewrites the head for the upstream.

#include "core/errc.hpp"
#include "core/str_cat.hpp"
#include "filters/exchange.hpp"
#include "policy/model.hpp"
#include "proxy/session_io.hpp"

#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::proxy::h1 {

namespace http = boost::beast::http;
using request_parser = http::request_parser<http::buffer_body>;

std::uint32_t header_limit(const policy::model::limits& limits);

// What reading a request head gave.
struct head_outcome {
  enum class kind { complete, closed, timed_out, refused };
  kind what = kind::complete;
  core::errc reason = core::errc::ok;  // for refused
  std::string detail;
};

// Sets the parser's limits for a head about to be read.
void prepare_head(request_parser& p, const policy::model::limits& limits);
// What a head read (async_read_header's error and byte count) gave. `closed`: the connection
// ended cleanly before a request began (nothing to record).
head_outcome head_read(boost::system::error_code ec, std::size_t n,
                       const boost::beast::flat_buffer& buffer,
                       const policy::model::limits& limits);

// Reads the head into `p` within head_timeout and header_bytes. (The session does the same
// three steps inline, sparing a coroutine frame per request.)
template <class Client>
boost::asio::awaitable<head_outcome> read_head(Client& client, boost::beast::flat_buffer& buffer,
                                               request_parser& p,
                                               const policy::model::limits& limits);

// Why a target with a byte net::target_bytes_ok() refuses is refused (HTTP/1.1 and HTTP/2 alike).
inline constexpr std::string_view bad_target_bytes =
    "the request target has a byte no target may (RFC 9112 section 3.2: a control, space, "
    "non-ASCII, '#' or '\\')";

// A refusal of the request as parsed, with whether the connection may go on after it.
struct refusal {
  core::errc reason = core::errc::bad_request;
  std::string detail;
  bool may_keep_alive = false;  // the head was sound; only what it asks for is refused
};

// Fills `ex` (method, scheme, target, path, framing, upgrade; the record's fields) from a
// complete head. `tunnel_target`: the CONNECT authority when the request came inside an
// intercepted tunnel (an origin-form target is then required). A refusal is recorded nowhere:
// the caller does that.
std::optional<refusal> parse_request(const request_parser& p, const net::authority* tunnel_target,
                                     const policy::model::limits& limits, filters::exchange& ex);

// Rewrites the head in place for the upstream: origin-form target from `ex.path_and_query`,
// Host from the target, no hop-by-hop headers (RFC 9110 section 7.6.1), the allowed upgrade
// kept, Expect removed (the proxy answers 100-continue itself), HTTP/1.1 kept alive.
// Returns the upgrade protocol that the rule allows (empty if none).
std::string rewrite_for_upstream(http::request<http::buffer_body>& req,
                                 const filters::exchange& ex);

// Why a request body was refused as too large: the rule's limit, or the proxy's.
std::string body_limit_detail(const filters::exchange& ex);

// Whether the client sent "Expect: 100-continue".
bool expects_continue(const http::request_header<>& req);

// --- templates ---

template <class Client>
boost::asio::awaitable<head_outcome> read_head(Client& client, boost::beast::flat_buffer& buffer,
                                               request_parser& p,
                                               const policy::model::limits& limits) {
  prepare_head(p, limits);
  set_timeout(client, limits.head_timeout);
  auto [ec, n] = co_await http::async_read_header(client, buffer, p, use_tuple);
  co_return head_read(ec, n, buffer, limits);
}

}  // namespace airlock::proxy::h1
