// airlock_redaction_bench [--mib N] [--chunk KIB] [--dense] [--events] [--wrapped]
//                         [--no-guard] [--repeat N] [--json]
//
// Generates a realistic JSON body (an API listing of records: ids, timestamps, UUIDs, prices,
// prose, URLs) of N MiB (default 100) with a few secrets sprinkled in, then streams it through
// the full built-in redactor library in 64 KiB chunks on one thread and reports MB/s (per
// core). --dense puts an e-mail address and a phone number in every record (a user directory:
// the worst realistic case); --events frames the body as server-sent events, which also go
// through the event guard as in the proxy (event_guard.hpp), and every body through the
// escape guard (escape_guard.hpp); --wrapped makes the body the listing's base64 as MIME writes
// it (76 columns, CRLF; no secret planted: the escape guard reads every line break of it, its
// worst realistic case); --no-guard: the stream alone, to compare. --repeat times
// that many passes over the same body (each a fresh stream). After the timed passes, one
// untimed pass keeps the whole output and checks that none of the planted secrets is left in
// it; the exit status is 1 when one is. --json prints one JSON object instead of the text
// report (bench/bench.py reads it: scenario "redaction").
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/escape_guard.hpp"
#include "filters/redaction/event_guard.hpp"
#include "filters/redaction/stream.hpp"
#include "policy/token.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace rd = airlock::filters::redaction;

namespace {

const char* const kWords[] = {
    "the",     "request", "returned", "a",      "list",    "of",      "items",   "with",
    "status",  "pending", "for",      "review", "and",     "deploy",  "cluster", "region",
    "latency", "budget",  "owner",    "team",   "service", "version", "release", "notes",
    "backend", "retry",   "window",   "quota",  "limit",   "config",  "update",  "build"};

// One of these about every MB of body, in turn. Each is of a kind the library redacts; the last
// is the literal secret the engine is built with (kLiteralSecret).
const char* const kLiteralSecret = "sk-bench-0123456789";
const char* const kSecrets[] = {
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "4111 1111 1111 1111",
    "ops@example.com",
    "xoxb-1234567890-abcdefghijklmnop",
    kLiteralSecret,
};
constexpr std::size_t kSecretKinds = sizeof kSecrets / sizeof *kSecrets;

std::string make_body(std::size_t target, bool dense, bool events, bool plant,
                      std::size_t& planted) {
  std::mt19937_64 rng(42);
  auto word = [&] { return kWords[rng() % (sizeof kWords / sizeof *kWords)]; };
  auto hex = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += "0123456789abcdef"[rng() % 16];
    return s;
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
    if (plant && since_secret > 1000000) {  // about one secret per MB
      rec += ",\"note\":\"token ";
      rec += kSecrets[planted % kSecretKinds];
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

struct pass_result {
  double cpu = 0, wall = 0;  // seconds
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// One timed pass: a fresh stream over the whole body, chunk by chunk, output discarded as a
// proxy would send it on. `last` keeps the stream's counters for the report.
pass_result timed_pass(const rd::build_result& built, const std::string& body, std::size_t chunk,
                       rd::framing frame, bool with_guard, std::unique_ptr<rd::stream>& last,
                       std::size_t& out_bytes, std::size_t& max_retained) {
  auto s = std::make_unique<rd::stream>(built.compiled, rd::stream_options{frame, 0});
  // Event streams also go through the event guard, as response_body has them.
  std::optional<rd::event_guard> guard;
  if (frame != rd::framing::none && with_guard) guard.emplace(*built.compiled, frame);
  // Every text body goes through the escape guard, as response_body has it.
  std::optional<rd::escape_guard> escapes;
  if (with_guard) escapes.emplace(*built.compiled);
  std::string out, guarded;
  out.reserve(2 * chunk);
  out_bytes = 0;
  max_retained = 0;
  auto pass_on = [&](bool last) {
    if (guard) {
      guarded.clear();
      if (!guard->write(out, guarded) || (last && !guard->finish(guarded)))
        std::fprintf(stderr, "warning: the event guard cut the body\n");
      out.swap(guarded);
    }
    if (escapes) {
      guarded.clear();
      if (!escapes->write(out, guarded)) std::fprintf(stderr, "warning: the escape guard cut\n");
      if (last) escapes->finish(guarded);
      out.swap(guarded);
    }
    out_bytes += out.size();
    out.clear();
  };
  const double c0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t off = 0; off < body.size(); off += chunk) {
    s->write(std::string_view(body).substr(off, chunk), out);
    pass_on(false);
    max_retained = std::max(max_retained, s->retained());
  }
  s->finish(out);
  pass_on(true);
  const auto t1 = std::chrono::steady_clock::now();
  pass_result r{thread_cpu_seconds() - c0, std::chrono::duration<double>(t1 - t0).count()};
  last = std::move(s);
  return r;
}

// Untimed: the whole output of one more pass, and which planted secrets are still in it.
std::vector<std::string> leaked_secrets(const rd::build_result& built, const std::string& body,
                                        std::size_t chunk, rd::framing frame, std::size_t planted) {
  rd::stream s(built.compiled, {frame, 0});
  std::string all;
  all.reserve(body.size() + body.size() / 8);
  for (std::size_t off = 0; off < body.size(); off += chunk)
    s.write(std::string_view(body).substr(off, chunk), all);
  s.finish(all);
  // A kind the generator did not really plant would pass unseen: say so as a leak too.
  std::vector<std::string> leaked;
  for (std::size_t k = 0; k < kSecretKinds && k < planted; ++k)
    if (body.find(kSecrets[k]) == std::string::npos)
      leaked.push_back(std::string("(not in the body) ") + kSecrets[k]);
    else if (all.find(kSecrets[k]) != std::string::npos)
      leaked.emplace_back(kSecrets[k]);
  return leaked;
}

// The listing's base64 in 76-character lines (RFC 2045 section 6.8), none of the secrets in it.
std::string make_wrapped_body(std::size_t target, bool dense) {
  std::size_t planted = 0;
  const std::string b64 =
      airlock::policy::base64_encode(make_body(target / 78 * 57, dense, false, false, planted));
  std::string body;
  body.reserve(b64.size() + b64.size() / 38);
  for (std::size_t i = 0; i < b64.size(); i += 76)
    (body += std::string_view(b64).substr(i, 76)) += "\r\n";
  return body;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 100, chunk_kib = 64, repeat = 1;
  bool dense = false, events = false, wrapped = false, json = false, with_guard = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--chunk") && i + 1 < argc) {
      chunk_kib = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--dense")) {
      dense = true;
    } else if (!std::strcmp(argv[i], "--events")) {
      events = true;
    } else if (!std::strcmp(argv[i], "--wrapped")) {
      wrapped = true;
    } else if (!std::strcmp(argv[i], "--no-guard")) {
      with_guard = false;
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--mib N] [--chunk KIB] [--dense] [--events] [--wrapped] [--no-guard] "
          "[--repeat N] [--json]\n",
          argv[0]);
      return 2;
    }
  }
  if (mib == 0 || chunk_kib == 0 || repeat == 0 || repeat > 100 || (wrapped && events)) return 2;

  auto built = rd::engine::build(rd::all_builtin_redactors(), {{"bench", kLiteralSecret}});
  if (!built.compiled) {
    for (const auto& e : built.errors)
      std::fprintf(stderr, "error: %s\n", e.c_str());
    return 1;
  }
  std::size_t planted = 0;
  const std::string body = wrapped ? make_wrapped_body(mib << 20, dense)
                                   : make_body(mib << 20, dense, events, true, planted);
  const std::size_t chunk = chunk_kib << 10;
  const rd::framing frame = events ? rd::framing::events : rd::framing::none;

  // Warm-up (RE2 builds its DFA states lazily) on the first few MiB, then the timed passes.
  {
    rd::stream warm(built.compiled, {frame, 0});
    std::string out;
    for (std::size_t off = 0; off < body.size() && off < (8u << 20); off += chunk) {
      warm.write(std::string_view(body).substr(off, chunk), out);
      out.clear();
    }
  }

  std::vector<pass_result> passes;
  std::unique_ptr<rd::stream> s;
  std::size_t out_bytes = 0, max_retained = 0;
  for (std::size_t i = 0; i < repeat; ++i)
    passes.push_back(timed_pass(built, body, chunk, frame, with_guard, s, out_bytes, max_retained));
  const std::vector<std::string> leaked = leaked_secrets(built, body, chunk, frame, planted);

  // Per core = per second of this thread's CPU time (the wall clock also counts time the
  // thread waited for a core on a busy machine).
  const double mb = double(body.size()) / 1e6;
  std::vector<double> per_core, wall;
  for (const auto& p : passes) {
    per_core.push_back(mb / p.cpu);
    wall.push_back(mb / p.wall);
  }
  const auto hits = built.compiled->named(s->hits());

  if (json) {
    boost::json::object o;
    o["body_bytes"] = body.size();
    o["body"] = events ? "events" : "json";
    o["dense"] = dense;
    o["chunk_bytes"] = chunk;
    o["patterns"] = built.compiled->pattern_count();
    o["overlap"] = built.compiled->overlap();
    o["secrets_planted"] = planted;
    o["redactions"] = s->redactions();
    o["output_bytes"] = out_bytes;
    o["max_retained_bytes"] = max_retained;
    o["retention_bound_bytes"] = s->retention_bound();
    o["set_fallbacks"] = s->set_fallbacks();
    boost::json::object h;
    for (const auto& [name, n] : hits)
      h[name] = n;
    o["hits"] = std::move(h);
    boost::json::array ps;
    for (std::size_t i = 0; i < passes.size(); ++i)
      ps.push_back({{"cpu_seconds", passes[i].cpu},
                    {"wall_seconds", passes[i].wall},
                    {"mb_per_s_per_core", per_core[i]},
                    {"mb_per_s_wall", wall[i]}});
    o["passes"] = std::move(ps);
    o["mb_per_s_per_core"] = median(per_core);
    o["mb_per_s_wall"] = median(wall);
    boost::json::array lk;
    for (const auto& l : leaked)
      lk.emplace_back(l);
    o["leaked"] = std::move(lk);
    std::printf("%s\n", boost::json::serialize(o).c_str());
    return leaked.empty() ? 0 : 1;
  }

  std::printf("body: %.1f MiB %s%s, %zu KiB chunks, %zu secrets planted\n",
              double(body.size()) / (1 << 20),
              wrapped  ? "base64 of JSON, 76 columns"
              : events ? "server-sent events"
                       : "JSON",
              dense ? " (dense: e-mail and phone in every record)" : "", chunk_kib, planted);
  std::printf("patterns: %zu (full built-in library + 1 literal secret), overlap %zu\n",
              built.compiled->pattern_count(), built.compiled->overlap());
  std::printf("redactions: %llu, output %zu bytes, max retained %zu bytes (bound %zu)\n",
              static_cast<unsigned long long>(s->redactions()), out_bytes, max_retained,
              s->retention_bound());
  for (const auto& [name, n] : hits)
    std::printf("  %-16.*s %llu\n", int(name.size()), name.data(),
                static_cast<unsigned long long>(n));
  if (s->set_fallbacks() != 0)
    std::printf("set fallbacks: %llu\n", static_cast<unsigned long long>(s->set_fallbacks()));
  for (std::size_t i = 0; i < passes.size(); ++i)
    std::printf("%s: %.0f MB/s per core (%.3f s CPU; wall clock %.3f s, %.0f MB/s)\n",
                passes.size() > 1 ? ("pass " + std::to_string(i + 1)).c_str() : "throughput",
                per_core[i], passes[i].cpu, passes[i].wall, wall[i]);
  if (passes.size() > 1)
    std::printf("throughput: %.0f MB/s per core (median of %zu passes)\n", median(per_core),
                passes.size());
  for (const auto& l : leaked)
    std::printf("LEAKED: a planted secret is still in the output: %s\n", l.c_str());
  return leaked.empty() ? 0 : 1;
}
