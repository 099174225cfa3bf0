// airlock_redaction_bench [--mib N] [--chunk KIB] [--dense] [--events]
//
// Generates a realistic JSON body (an API listing of records: ids, timestamps, UUIDs, prices,
// prose, URLs) of N MiB (default 100) with a few secrets sprinkled in, then streams it through
// the full built-in redactor library in 64 KiB chunks on one thread and reports MB/s (per
// core). --dense puts an e-mail address and a phone number in every record (a user directory:
// the worst realistic case); --events frames the body as server-sent events.

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/stream.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <string_view>

namespace rd = airlock::filters::redaction;

namespace {

const char* const kWords[] = {
    "the",     "request", "returned", "a",      "list",    "of",      "items",   "with",
    "status",  "pending", "for",      "review", "and",     "deploy",  "cluster", "region",
    "latency", "budget",  "owner",    "team",   "service", "version", "release", "notes",
    "backend", "retry",   "window",   "quota",  "limit",   "config",  "update",  "build"};

std::string make_body(std::size_t target, bool dense, bool events, std::size_t& planted) {
  std::mt19937_64 rng(42);
  auto word = [&] { return kWords[rng() % (sizeof kWords / sizeof *kWords)]; };
  auto hex = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += "0123456789abcdef"[rng() % 16];
    return s;
  };
  const char* const kSecrets[] = {
      "AKIAIOSFODNN7EXAMPLE",
      "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
      "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "4111 1111 1111 1111",
      "ops@example.com",
      "xoxb-1234567890-abcdefghijklmnop",
  };
  std::string body = events ? "" : "{\"items\":[";
  std::uint64_t id = 100000;
  std::size_t since_secret = 0;
  planted = 0;
  while (body.size() < target) {
    ++id;
    std::string rec = "{\"id\":" + std::to_string(id) + ",\"uuid\":\"" + hex(8) + "-" + hex(4) +
                      "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12) +
                      "\",\"created_at\":\"2024-03-" + std::to_string(10 + id % 18) +
                      "T12:34:56.789Z\",\"updated_ms\":" + std::to_string(1700000000000ULL + id) +
                      ",\"price\":" + std::to_string(id % 1000) + "." +
                      std::to_string(10 + id % 89) + ",\"title\":\"";
    for (int i = 0; i < 6; ++i)
      (rec += word()) += ' ';
    rec += "\",\"description\":\"";
    for (int i = 0; i < 30; ++i)
      (rec += word()) += ' ';
    rec += "\",\"url\":\"https://api.example.com/v1/items/" + std::to_string(id) +
           "?expand=owner\",\"sha\":\"" + hex(40) + "\",\"tags\":[\"" + word() + "\",\"" + word() +
           "\"]";
    if (dense)
      rec += ",\"email\":\"user" + std::to_string(id) + "@example.org\",\"phone\":\"+1 415 555 " +
             std::to_string(1000 + id % 9000) + "\"";
    since_secret += rec.size();
    if (since_secret > 1000000) {  // about one secret per MB
      rec += ",\"note\":\"token ";
      rec += kSecrets[planted % (sizeof kSecrets / sizeof *kSecrets)];
      rec += " leaked\"";
      ++planted;
      since_secret = 0;
    }
    rec += "}";
    if (events)
      body += "data: " + rec + "\n\n";
    else
      (body += rec) += ',';
  }
  if (!events) body += "{}]}";
  return body;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 100, chunk_kib = 64;
  bool dense = false, events = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--chunk") && i + 1 < argc) {
      chunk_kib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--dense")) {
      dense = true;
    } else if (!std::strcmp(argv[i], "--events")) {
      events = true;
    } else {
      std::fprintf(stderr, "usage: %s [--mib N] [--chunk KIB] [--dense] [--events]\n", argv[0]);
      return 2;
    }
  }
  if (mib == 0 || chunk_kib == 0) return 2;

  auto built = rd::engine::build(rd::all_builtin_redactors(), {{"bench", "sk-bench-0123456789"}});
  if (!built.compiled) {
    for (const auto& e : built.errors)
      std::fprintf(stderr, "error: %s\n", e.c_str());
    return 1;
  }
  std::size_t planted = 0;
  const std::string body = make_body(mib << 20, dense, events, planted);
  const std::size_t chunk = chunk_kib << 10;

  // Warm-up (RE2 builds its DFA states lazily) on the first few MiB, then the timed run.
  {
    rd::stream warm(built.compiled);
    std::string out;
    for (std::size_t off = 0; off < body.size() && off < (8u << 20); off += chunk) {
      warm.write(std::string_view(body).substr(off, chunk), out);
      out.clear();
    }
  }

  rd::stream s(built.compiled, {events ? rd::framing::events : rd::framing::none, 0});
  std::string out;
  out.reserve(2 * chunk);
  std::size_t out_bytes = 0, max_retained = 0;
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
  };
  const double c0 = cpu_now();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t off = 0; off < body.size(); off += chunk) {
    s.write(std::string_view(body).substr(off, chunk), out);
    out_bytes += out.size();
    out.clear();
    if (s.retained() > max_retained) max_retained = s.retained();
  }
  s.finish(out);
  out_bytes += out.size();
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu = cpu_now() - c0;
  const double secs = std::chrono::duration<double>(t1 - t0).count();

  std::printf("body: %.1f MiB %s%s, %zu KiB chunks, %zu secrets planted\n",
              double(body.size()) / (1 << 20), events ? "server-sent events" : "JSON",
              dense ? " (dense: e-mail and phone in every record)" : "", chunk_kib, planted);
  std::printf("patterns: %zu (full built-in library + 1 literal secret), overlap %zu\n",
              built.compiled->pattern_count(), built.compiled->overlap());
  std::printf("redactions: %llu, output %zu bytes, max retained %zu bytes (bound %zu)\n",
              static_cast<unsigned long long>(s.redactions()), out_bytes, max_retained,
              s.retention_bound());
  for (const auto& [name, n] : built.compiled->named(s.hits()))
    std::printf("  %-16.*s %llu\n", int(name.size()), name.data(),
                static_cast<unsigned long long>(n));
  if (s.set_fallbacks() != 0)
    std::printf("set fallbacks: %llu\n", static_cast<unsigned long long>(s.set_fallbacks()));
  // Per core = per second of this thread's CPU time (the wall clock also counts time the
  // thread waited for a core on a busy machine).
  std::printf("throughput: %.0f MB/s per core (%.3f s CPU; wall clock %.3f s, %.0f MB/s)\n",
              double(body.size()) / cpu / 1e6, cpu, secs, double(body.size()) / secs / 1e6);
  return 0;
}
