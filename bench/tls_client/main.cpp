// airlock_bench_tls_client: an HTTPS load client that can go through a forward proxy's
// CONNECT tunnel, for bench/bench.py's HTTPS-inspection scenario (wrk cannot tunnel).
// Output: one line `TLS_JSON {...}` on stdout; exit 0 when it ran (errors are in the JSON),
// 2 on bad usage or setup.

#include "connection.hpp"
#include "load.hpp"
#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace bench = airlock::bench;

namespace {

// Only JSON-safe characters of an error detail (they come from OpenSSL and from peers).
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += ' ';
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      out += '?';
    else
      out += c;
  }
  return out + "\"";
}

// Nearest-rank percentiles, microseconds.
std::string percentiles(std::vector<std::uint32_t> v) {
  if (v.empty()) return "null";
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()) + 0.999999);
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
  };
  double sum = 0;
  for (auto x : v)
    sum += x;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"mean\":%.1f,\"p50\":%u,\"p90\":%u,\"p99\":%u,\"p999\":%u,\"max\":%u}",
                sum / static_cast<double>(v.size()), at(50), at(90), at(99), at(99.9), v.back());
  return buf;
}

std::string list(const std::vector<std::uint32_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  out += ']';
  return out;
}

std::string errors_json(const bench::error_counts& e) {
  std::string out = "{";
  for (int k = 1; k < bench::failure_kinds; ++k) {
    out += (k > 1 ? "," : "");
    out += std::string("\"") + bench::failure_name(static_cast<bench::failure>(k)) +
           "\":" + std::to_string(e.by_kind[static_cast<std::size_t>(k)]);
  }
  return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string error;
  auto o = bench::parse_options(argc, argv, error);
  if (!o) {
    std::fprintf(stderr, "%s\n%s", error.c_str(), bench::usage);
    return 2;
  }
  boost::system::error_code ec;
  auto address = bench::asio::ip::make_address(o->connect_host, ec);
  if (ec) {
    std::fprintf(stderr, "--connect needs an IP address, not %s\n", o->connect_host.c_str());
    return 2;
  }
  bench::tcp::endpoint to(address, o->connect_port);
  bench::ssl::context ctx(bench::ssl::context::tls_client);
  if (!bench::make_client_context(ctx, o->cafile, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  std::string json;
  if (o->mode == bench::run_mode::handshake) {
    auto r = bench::run_handshakes(*o, ctx, to);
    json = "{\"mode\":\"handshake\",\"names\":" + std::to_string(o->names.size()) +
           ",\"errors\":" + errors_json(r.errors) +
           ",\"first_error\":" + json_string(r.errors.first) + ",\"passes\":[";
    for (std::size_t i = 0; i < r.passes.size(); ++i) {
      const auto& p = r.passes[i];
      json += (i ? "," : "");
      json += "{\"tcp_us\":" + list(p.tcp_us) + ",\"tunnel_us\":" + list(p.tunnel_us) +
              ",\"handshake_us\":" + list(p.handshake_us) +
              ",\"request_us\":" + list(p.request_us) + "}";
    }
    json += "]}";
  } else {
    auto r = bench::run_load(*o, ctx, to);
    char nums[512];
    std::snprintf(
        nums, sizeof nums,
        "\"requests\":%llu,\"bytes\":%llu,\"connections_opened\":%llu,"
        "\"seconds\":%.4f,\"cpu_seconds\":%.3f,\"setup_seconds\":%.3f",
        static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.bytes),
        static_cast<unsigned long long>(r.connections), r.seconds, r.cpu_seconds, r.setup_seconds);
    json = std::string("{\"mode\":\"") +
           (o->mode == bench::run_mode::keepalive ? "keepalive" : "newconn") +
           "\",\"connections\":" + std::to_string(o->connections) + "," + nums +
           ",\"errors\":" + errors_json(r.errors) +
           ",\"first_error\":" + json_string(r.errors.first) +
           ",\"latency_us\":" + percentiles(r.latency_us) +
           ",\"handshake_us\":" + percentiles(r.handshake_us) + "}";
  }
  std::printf("TLS_JSON %s\n", json.c_str());
  return 0;
}
