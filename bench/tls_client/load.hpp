#pragma once
// The three workloads of the HTTPS client: kept-alive connections, a new connection per
// request, and sequential handshakes over a list of names (leaf mint vs leaf cache).
//
// One thread drives every connection, as `wrk -t1` does, so the client's cost is the same
// for every target and its own ceiling can be read off the direct run.

#include "connection.hpp"
#include "options.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace airlock::bench {

struct error_counts {
  std::array<std::uint64_t, failure_kinds> by_kind{};
  std::string first;  // the first error's detail, for the report
  std::uint64_t total() const;
  void add(failure f, const std::string& detail);
};

struct load_result {
  std::uint64_t requests = 0;     // responses completed inside the recorded window
  std::uint64_t bytes = 0;        // their heads and bodies
  std::uint64_t connections = 0;  // TLS connections opened inside the window
  error_counts errors;            // the whole run: warm-up and requests pending at the end too
  std::vector<std::uint32_t> latency_us;    // per recorded response
  std::vector<std::uint32_t> handshake_us;  // newconn: TCP start to handshake done
  double seconds = 0;                       // the recorded window
  double cpu_seconds = 0;                   // this process's CPU in the window
  double setup_seconds = 0;                 // keepalive: opening every connection before the window
};

// keepalive or newconn, as options.mode says.
load_result run_load(const options& o, ssl::context& ctx, const tcp::endpoint& to);

struct handshake_pass {
  // Per name, in microseconds: TCP connect, CONNECT round trip, TLS handshake, request.
  std::vector<std::uint32_t> tcp_us, tunnel_us, handshake_us, request_us;
};

struct handshake_result {
  // passes[k] holds the (k+1)-th connection to each name, in the order of options.names.
  std::vector<handshake_pass> passes;
  error_counts errors;
};

handshake_result run_handshakes(const options& o, ssl::context& ctx, const tcp::endpoint& to);

}  // namespace airlock::bench
