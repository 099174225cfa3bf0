#include "options.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace airlock::bench {

const char* const usage =
    "usage: airlock_bench_tls_client --connect HOST:PORT [--proxy] --host NAME --port PORT\n"
    "         --cafile PEM [--path /small] [--mode keepalive|newconn|handshake]\n"
    "         [--connections N] [--seconds S] [--warmup S] [--timeout S] [--expect-body N]\n"
    "         [--names a,b,c] [--repeat K]\n"
    "Prints one line `TLS_JSON {...}` with counts, errors and latency percentiles.\n";

namespace {

bool to_number(std::string_view text, long long& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

bool to_seconds(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && out >= 0 && out < 86400;
}

bool to_port(std::string_view text, std::uint16_t& out) {
  long long v = 0;
  if (!to_number(text, v) || v < 1 || v > 65535) return false;
  out = static_cast<std::uint16_t>(v);
  return true;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<options> parse_options(int argc, char** argv, std::string& error) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--proxy") {
      o.via_proxy = true;
      continue;
    }
    if (i + 1 >= argc) {
      error = std::string(flag) + " needs a value";
      return std::nullopt;
    }
    std::string value = argv[++i];
    long long n = 0;
    bool ok = true;
    if (flag == "--connect") {
      auto colon = value.rfind(':');
      ok = colon != std::string::npos &&
           to_port(std::string_view(value).substr(colon + 1), o.connect_port);
      if (ok) o.connect_host = value.substr(0, colon);
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      ok = to_port(value, o.port);
    } else if (flag == "--cafile") {
      o.cafile = value;
    } else if (flag == "--path") {
      ok = !value.empty() && value[0] == '/';
      o.path = value;
    } else if (flag == "--mode") {
      if (value == "keepalive")
        o.mode = run_mode::keepalive;
      else if (value == "newconn")
        o.mode = run_mode::newconn;
      else if (value == "handshake")
        o.mode = run_mode::handshake;
      else
        ok = false;
    } else if (flag == "--connections") {
      ok = to_number(value, n) && n >= 1 && n <= 10000;
      o.connections = static_cast<int>(n);
    } else if (flag == "--seconds") {
      ok = to_seconds(value, o.seconds) && o.seconds > 0;
    } else if (flag == "--warmup") {
      ok = to_seconds(value, o.warmup);
    } else if (flag == "--timeout") {
      ok = to_seconds(value, o.timeout) && o.timeout > 0;
    } else if (flag == "--expect-body") {
      ok = to_number(value, n) && n >= 0;
      o.expect_body = static_cast<std::size_t>(n);
    } else if (flag == "--names") {
      o.names = split(value);
      ok = !o.names.empty();
    } else if (flag == "--repeat") {
      ok = to_number(value, n) && n >= 1 && n <= 100;
      o.repeat = static_cast<int>(n);
    } else {
      error = "unknown option " + std::string(flag);
      return std::nullopt;
    }
    if (!ok) {
      error = "bad value for " + std::string(flag) + ": " + value;
      return std::nullopt;
    }
  }
  if (o.connect_port == 0 || o.host.empty() || o.port == 0 || o.cafile.empty()) {
    error = "--connect, --host, --port and --cafile are required";
    return std::nullopt;
  }
  if (o.mode == run_mode::handshake && o.names.empty()) o.names.push_back(o.host);
  return o;
}

}  // namespace airlock::bench
