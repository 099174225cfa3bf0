#pragma once
// One HTTPS client connection, directly to the origin or through a forward proxy's CONNECT
// tunnel (RFC 9110 section 9.3.6), and one HTTP/1.1 exchange on it at a time.
//
// Errors are returned as a `failure` kind with a readable detail, never thrown: a load run
// counts them per kind and goes on.

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace airlock::bench {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using tls_stream = ssl::stream<tcp::socket>;
using steady = std::chrono::steady_clock;

enum class failure {
  none,
  connect,  // TCP connect refused or failed
  proxy,    // CONNECT answered with something other than 2xx, or extra bytes after it
  tls,      // handshake failed (an untrusted or wrong-name certificate included)
  io,       // read or write error after the handshake, or the peer closed early
  status,   // a response status other than 200
  body,     // a response body shorter than expected, or no Content-Length
  timeout,  // no progress within the timeout (the connection was closed under us)
};
inline constexpr int failure_kinds = 8;
const char* failure_name(failure f);

// The client TLS context: trusts `cafile` only, TLS 1.2+, ALPN http/1.1, no session cache
// (every handshake is a full one).
bool make_client_context(ssl::context& ctx, const std::string& cafile, std::string& error);

struct endpoint_spec {
  tcp::endpoint connect_to;  // the proxy or the origin
  bool via_proxy = false;
  std::string host;  // the name in CONNECT, SNI, certificate check and Host
  std::uint16_t port = 0;
};

// Phase timestamps of one opening (steady clock).
struct open_times {
  steady::time_point start, tcp_done, tunnel_done, handshake_done;
};

// TCP connect, CONNECT when via_proxy, then the TLS handshake with SNI and name check.
asio::awaitable<failure> open_connection(tls_stream& s, const endpoint_spec& spec,
                                         std::string& detail, open_times* times = nullptr);

struct exchange_result {
  failure fail = failure::none;
  std::size_t bytes = 0;       // head + body
  bool server_closes = false;  // the response said Connection: close
};

// Writes `request` and reads one response into `buffer` (kept across calls for pipelined
// bytes; there are none with one request in flight). Needs Content-Length (RFC 9112 section
// 6.3); a chunked or close-delimited response is reported as `body`.
asio::awaitable<exchange_result> exchange(tls_stream& s, std::string& buffer,
                                          const std::string& request, std::size_t expect_body,
                                          std::string& detail);

// GET `path` in origin-form with Host; `close` asks the server to close after it.
std::string make_request(const endpoint_spec& spec, const std::string& path, bool close);

}  // namespace airlock::bench
