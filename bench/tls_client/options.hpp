#pragma once
// Command line of the HTTPS load client (see usage in options.cpp and bench/README.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace airlock::bench {

enum class run_mode {
  keepalive,  // each connection is opened once, then carries request after request
  newconn,    // every request on a new connection: TCP, CONNECT, full TLS handshake, close
  handshake,  // one connection at a time, `repeat` per name in a row: mint vs cache timing
};

struct options {
  std::string connect_host = "127.0.0.1";  // where TCP goes: the proxy, or the origin itself
  std::uint16_t connect_port = 0;
  bool via_proxy = false;  // send `CONNECT host:port` first (RFC 9110 section 9.3.6)
  std::string host;        // TLS name (SNI, verified) and the CONNECT / Host authority
  std::uint16_t port = 0;  // the origin's port, named in CONNECT and Host
  std::string cafile;      // the only trust anchor: the origin CA, or the proxy's CA
  std::string path = "/small";
  run_mode mode = run_mode::keepalive;
  int connections = 16;
  double seconds = 5;
  double warmup = 0;               // unrecorded load before the recorded window
  double timeout = 10;             // no progress on a connection for this long is an error
  std::size_t expect_body = 0;     // fewer body bytes in a response is an error
  std::vector<std::string> names;  // handshake mode: TLS names, each new to the proxy
  int repeat = 2;                  // handshake mode: connections per name
};

extern const char* const usage;

// Parses argv[1..]; nullopt with `error` set on bad usage.
std::optional<options> parse_options(int argc, char** argv, std::string& error);

}  // namespace airlock::bench
