#include "telemetry/metrics.hpp"

#include "../support/skip.hpp"

#include <gtest/gtest.h>

#include <prometheus/metric_family.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::telemetry {
namespace {

using namespace std::chrono_literals;
using label_map = std::map<std::string, std::string>;

const prometheus::MetricFamily* find_family(const std::vector<prometheus::MetricFamily>& all,
                                            std::string_view name) {
  for (const auto& f : all) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

label_map labels_of(const prometheus::ClientMetric& m) {
  label_map out;
  for (const auto& l : m.label)
    out[l.name] = l.value;
  return out;
}

// The sample of family `name` whose labels are exactly `labels`, if any.
std::optional<prometheus::ClientMetric> sample(metrics& m, std::string_view name,
                                               const label_map& labels = {}) {
  auto all = m.registry().Collect();
  const auto* f = find_family(all, name);
  if (!f) return std::nullopt;
  for (const auto& metric : f->metric) {
    if (labels_of(metric) == labels) return metric;
  }
  return std::nullopt;
}

double counter(metrics& m, std::string_view name, const label_map& labels = {}) {
  auto s = sample(m, name, labels);
  return s ? s->counter.value : -1;
}

double gauge(metrics& m, std::string_view name, const label_map& labels = {}) {
  auto s = sample(m, name, labels);
  return s ? s->gauge.value : -1;
}

std::uint64_t histogram_count(metrics& m, std::string_view name, const label_map& labels = {}) {
  auto s = sample(m, name, labels);
  return s ? s->histogram.sample_count : ~0ull;
}

std::size_t series_count(metrics& m, std::string_view name) {
  auto all = m.registry().Collect();
  const auto* f = find_family(all, name);
  return f ? f->metric.size() : 0;
}

label_map req(std::string agent, std::string rule, std::string decision, std::string reason,
              std::string protocol = "h1") {
  return {{"agent", agent},
          {"rule", rule},
          {"decision", decision},
          {"reason", reason},
          {"protocol", protocol}};
}

TEST(Metrics, ProtocolLabelHasThreeValues) {
  metrics m("1");
  m.request_finished("a", "r", "allow", "ok", 1ms, 0, 0, false, "h2");
  m.request_finished("a", "r", "allow", "ok", 1ms, 0, 0, false, "h2");
  m.request_finished("a", "r", "allow", "ok", 1ms, 0, 0, false, "websocket");
  m.request_finished("a", "r", "allow", "ok", 1ms, 0, 0, false, "http/1.1");
  m.request_finished("a", "r", "allow", "ok", 1ms, 0, 0, false, "gopher");  // anything else: h1
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "allow", "ok", "h2")), 2);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "allow", "ok", "ws")), 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "allow", "ok", "h1")), 2);
  EXPECT_EQ(series_count(m, "airlock_requests_total"), 3u);
}

TEST(Metrics, RequestCountersHistogramAndBytes) {
  metrics m("1.2.3");
  m.request_finished("coder", "github", "allow", "ok", 3ms, 100, 2000);
  m.request_finished("coder", "github", "allow", "ok", 5ms, 1, 2);
  m.request_finished("coder", "", "deny", "host_denied", 100us, 0, 0);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("coder", "github", "allow", "ok")), 2);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("coder", "none", "deny", "host_denied")), 1);
  EXPECT_EQ(
      counter(m, "airlock_request_bytes_total", {{"agent", "coder"}, {"direction", "from_client"}}),
      101);
  EXPECT_EQ(
      counter(m, "airlock_request_bytes_total", {{"agent", "coder"}, {"direction", "to_client"}}),
      2002);
  EXPECT_EQ(histogram_count(m, "airlock_request_duration_seconds", {{"decision", "allow"}}), 2u);
  EXPECT_EQ(histogram_count(m, "airlock_request_duration_seconds", {{"decision", "deny"}}), 1u);
  auto h = sample(m, "airlock_request_duration_seconds", {{"decision", "allow"}});
  ASSERT_TRUE(h);
  EXPECT_NEAR(h->histogram.sample_sum, 0.008, 1e-9);
  // Buckets from 0.5 ms to 30 s, then +Inf.
  ASSERT_FALSE(h->histogram.bucket.empty());
  EXPECT_DOUBLE_EQ(h->histogram.bucket.front().upper_bound, 0.0005);
  EXPECT_DOUBLE_EQ(h->histogram.bucket[h->histogram.bucket.size() - 2].upper_bound, 30);
}

TEST(Metrics, TunnelsObserveTheirOwnHistogram) {
  metrics m("1");
  m.request_finished("a", "r", "allow", "ok", 120s, 5, 6, /*tunnel=*/true);
  EXPECT_EQ(histogram_count(m, "airlock_request_duration_seconds", {{"decision", "allow"}}), 0u);
  EXPECT_EQ(histogram_count(m, "airlock_tunnel_duration_seconds", {{"decision", "allow"}}), 1u);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "allow", "ok")), 1);
}

TEST(Metrics, LabelValuesAreNormalisedToBoundedSets) {
  metrics m("1");
  m.request_finished("a", "r", "maybe", "ok", 1ms, 0, 0);                  // unknown decision
  m.request_finished("a", "r", "deny", "GET /secret?token=x", 1ms, 0, 0);  // request data
  m.request_finished("", "r", "allow", "ok", 1ms, 0, 0);
  m.request_finished("bad\xFF", "r", "allow", "ok", 1ms, 0, 0);
  m.request_finished("a", "r", "allow", "ok", -5ms, 0, 0);  // negative duration
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "error", "ok")), 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "r", "deny", "other")), 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("none", "r", "allow", "ok")), 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("_invalid", "r", "allow", "ok")), 1);
  EXPECT_EQ(m.serialize().find("secret"), std::string::npos);
  auto h = sample(m, "airlock_request_duration_seconds", {{"decision", "allow"}});
  ASSERT_TRUE(h);
  EXPECT_GE(h->histogram.sample_sum, 0.0);
}

TEST(Metrics, TuplesThatConcatenateAlikeStayApart) {
  metrics m("1");
  m.request_finished(
      "a\x1f"
      "b",
      "c", "allow", "ok", 1ms, 0, 0);
  m.request_finished("a",
                     "b\x1f"
                     "c",
                     "allow", "ok", 1ms, 0, 0);
  m.request_finished("ab", "c", "allow", "ok", 1ms, 0, 0);
  m.request_finished("a", "bc", "allow", "ok", 1ms, 0, 0);
  EXPECT_EQ(counter(m, "airlock_requests_total",
                    req("a\x1f"
                        "b",
                        "c", "allow", "ok")),
            1);
  EXPECT_EQ(counter(m, "airlock_requests_total",
                    req("a",
                        "b\x1f"
                        "c",
                        "allow", "ok")),
            1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("ab", "c", "allow", "ok")), 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("a", "bc", "allow", "ok")), 1);
}

TEST(Metrics, RequestSeriesCardinalityIsCapped) {
  constexpr std::size_t cap = 50;
  metrics m("1", cap);
  for (int i = 0; i < 1000; ++i) {
    m.request_finished("agent" + std::to_string(i), "rule", "allow", "ok", 1ms, 1, 1);
  }
  EXPECT_LE(series_count(m, "airlock_requests_total"), cap + 1);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("_overflow", "_overflow", "allow", "ok")),
            1000 - cap);
  EXPECT_EQ(counter(m, "airlock_request_bytes_total",
                    {{"agent", "_overflow"}, {"direction", "to_client"}}),
            1000 - cap);
  // Tuples seen before the cap keep their own series.
  m.request_finished("agent0", "rule", "allow", "ok", 1ms, 0, 0);
  EXPECT_EQ(counter(m, "airlock_requests_total", req("agent0", "rule", "allow", "ok")), 2);
  // The whole exposition stays bounded too.
  EXPECT_LT(m.serialize().size(), 64u * 1024);
}

TEST(Metrics, ConcurrentUpdatesAreExact) {
  metrics m("1");
  constexpr int threads = 8;
  constexpr int per_thread = 20000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&m, t] {
      for (int i = 0; i < per_thread; ++i) {
        m.request_finished(i % 2 ? "a" : "b", t % 2 ? "r1" : "r2", "allow", "ok", 1ms, 1, 2);
        m.connection_opened();
        m.connection_closed();
      }
    });
  }
  for (auto& th : pool)
    th.join();
  double total = 0;
  for (auto agent : {"a", "b"}) {
    for (auto rule : {"r1", "r2"}) {
      total += counter(m, "airlock_requests_total", req(agent, rule, "allow", "ok"));
    }
  }
  EXPECT_EQ(total, threads * per_thread);
  EXPECT_EQ(histogram_count(m, "airlock_request_duration_seconds", {{"decision", "allow"}}),
            static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(counter(m, "airlock_connections_total"), threads * per_thread);
  EXPECT_EQ(gauge(m, "airlock_connections_active"), 0);
}

TEST(Metrics, ThreadCacheDoesNotOutliveItsMetricsObject) {
  // Same thread, same labels, a new object (possibly at the same address): the cached series
  // of the destroyed object must not be used (ASan would report it).
  for (int round = 0; round < 3; ++round) {
    auto m = std::make_unique<metrics>("1");
    m->request_finished("a", "r", "allow", "ok", 1ms, 0, 0);
    EXPECT_EQ(counter(*m, "airlock_requests_total", req("a", "r", "allow", "ok")), 1);
  }
  metrics m1("1"), m2("2");
  for (int i = 0; i < 3; ++i) {
    m1.request_finished("a", "r", "allow", "ok", 1ms, 0, 0);
    m2.request_finished("a", "r", "allow", "ok", 1ms, 0, 0);
  }
  EXPECT_EQ(counter(m1, "airlock_requests_total", req("a", "r", "allow", "ok")), 3);
  EXPECT_EQ(counter(m2, "airlock_requests_total", req("a", "r", "allow", "ok")), 3);
}

TEST(Metrics, ConnectionsTunnelsPoolAndTls) {
  metrics m("1");
  m.connection_opened();
  m.connection_opened();
  m.connection_opened();
  m.connection_closed();
  m.tunnel_opened();
  m.tunnel_opened();
  m.tunnel_closed();
  m.pool_reuse(true);
  m.pool_reuse(true);
  m.pool_reuse(false);
  m.pool_reuse(true, true);
  m.leaf_minted();
  m.leaf_cache_hit();
  m.leaf_cache_hit();
  m.upstream_connect_time(2ms);
  m.upstream_tls_time(30ms);
  m.upstream_tls_time(40ms);
  EXPECT_EQ(gauge(m, "airlock_connections_active"), 2);
  EXPECT_EQ(counter(m, "airlock_connections_total"), 3);
  EXPECT_EQ(gauge(m, "airlock_tunnels_active"), 1);
  EXPECT_EQ(counter(m, "airlock_upstream_pool_total", {{"result", "hit"}, {"transport", "tcp"}}),
            2);
  EXPECT_EQ(counter(m, "airlock_upstream_pool_total", {{"result", "miss"}, {"transport", "tcp"}}),
            1);
  EXPECT_EQ(counter(m, "airlock_upstream_pool_total", {{"result", "hit"}, {"transport", "tls"}}),
            1);
  EXPECT_EQ(counter(m, "airlock_tls_leaf_mints_total"), 1);
  EXPECT_EQ(counter(m, "airlock_tls_leaf_cache_hits_total"), 2);
  EXPECT_EQ(histogram_count(m, "airlock_upstream_connect_duration_seconds"), 1u);
  EXPECT_EQ(histogram_count(m, "airlock_upstream_tls_handshake_duration_seconds"), 2u);
}

TEST(Metrics, UpstreamErrorKindsAreErrcNames) {
  metrics m("1");
  m.upstream_error("dns_error");
  m.upstream_error("dns_error");
  m.upstream_error("connect_timeout");
  m.upstream_error("some new thing");
  EXPECT_EQ(counter(m, "airlock_upstream_errors_total", {{"kind", "dns_error"}}), 2);
  EXPECT_EQ(counter(m, "airlock_upstream_errors_total", {{"kind", "connect_timeout"}}), 1);
  EXPECT_EQ(counter(m, "airlock_upstream_errors_total", {{"kind", "other"}}), 1);
  EXPECT_EQ(series_count(m, "airlock_upstream_errors_total"), 3u);
}

TEST(Metrics, BinaryRequestsByProgramAndDecision) {
  metrics m("1");
  m.binary_request("/usr/bin/git", "allow");
  m.binary_request("/usr/bin/git", "allow");
  m.binary_request("other", "deny");
  EXPECT_EQ(counter(m, "airlock_binary_requests_total",
                    {{"binary", "/usr/bin/git"}, {"decision", "allow"}}),
            2);
  EXPECT_EQ(
      counter(m, "airlock_binary_requests_total", {{"binary", "other"}, {"decision", "deny"}}), 1);
  EXPECT_EQ(series_count(m, "airlock_binary_requests_total"), 2u);
}

TEST(Metrics, PolicyInfoKeepsOnlyTheCurrentVersion) {
  metrics m("1");
  EXPECT_EQ(series_count(m, "airlock_policy_info"), 0u);
  m.policy_loaded(true, "v1", "startup");
  EXPECT_EQ(gauge(m, "airlock_policy_info", {{"version", "v1"}}), 1);
  double t1 = gauge(m, "airlock_policy_last_reload_success_timestamp_seconds");
  EXPECT_GT(t1, 1.6e9);

  m.policy_loaded(false, "v2", "sighup");
  EXPECT_EQ(gauge(m, "airlock_policy_info", {{"version", "v1"}}), 1) << "old policy stays";
  EXPECT_EQ(series_count(m, "airlock_policy_info"), 1u);
  EXPECT_EQ(counter(m, "airlock_policy_reload_failures_total"), 1);
  EXPECT_EQ(
      counter(m, "airlock_policy_reloads_total", {{"result", "failure"}, {"trigger", "sighup"}}),
      1);

  m.policy_loaded(true, "v2", "admin");
  EXPECT_EQ(series_count(m, "airlock_policy_info"), 1u);
  EXPECT_EQ(gauge(m, "airlock_policy_info", {{"version", "v2"}}), 1);
  EXPECT_FALSE(sample(m, "airlock_policy_info", {{"version", "v1"}}));
  m.policy_loaded(true, "v2", "admin");  // same version again: still one series
  EXPECT_EQ(series_count(m, "airlock_policy_info"), 1u);
  EXPECT_EQ(
      counter(m, "airlock_policy_reloads_total", {{"result", "success"}, {"trigger", "admin"}}), 2);
  EXPECT_EQ(
      counter(m, "airlock_policy_reloads_total", {{"result", "success"}, {"trigger", "startup"}}),
      1);
  EXPECT_EQ(counter(m, "airlock_policy_reload_failures_total"), 1);
  EXPECT_GE(gauge(m, "airlock_policy_last_reload_success_timestamp_seconds"), t1);
}

TEST(Metrics, BuildInfo) {
  metrics m("1.2.3");
  EXPECT_EQ(gauge(m, "airlock_build_info", {{"version", "1.2.3"}}), 1);
}

void populate(metrics& m) {
  m.request_finished("coder", "github", "allow", "ok", 3ms, 100, 2000);
  m.request_finished("coder", "github", "allow", "ok", 300s, 100, 2000, true);
  m.request_finished("default", "", "deny", "host_denied", 100us, 0, 0);
  m.connection_opened();
  m.tunnel_opened();
  m.upstream_connect_time(2ms);
  m.upstream_tls_time(20ms);
  m.upstream_error("dns_error");
  m.pool_reuse(true);
  m.leaf_minted();
  m.leaf_cache_hit();
  m.policy_loaded(true, "v1", "startup");
  m.policy_loaded(false, "", "sighup");
}

TEST(Metrics, StateStoreOnlyOnceReported) {
  metrics m("1.2.3");
  // state: local never reports: neither family is exported.
  EXPECT_EQ(series_count(m, "airlock_state_store_up"), 0u);
  EXPECT_EQ(series_count(m, "airlock_state_store_mode_changes_total"), 0u);
  m.state_store(false, false);  // down at start-up: not a change
  EXPECT_EQ(gauge(m, "airlock_state_store_up"), 0);
  EXPECT_EQ(counter(m, "airlock_state_store_mode_changes_total"), 0);
  m.state_store(true, true);
  m.state_store(false, true);
  EXPECT_EQ(gauge(m, "airlock_state_store_up"), 0);
  EXPECT_EQ(counter(m, "airlock_state_store_mode_changes_total"), 2);
}

TEST(Metrics, SerializeContainsEveryFamily) {
  metrics m("1.2.3");
  populate(m);
  std::string text = m.serialize();
  for (const char* family :
       {"airlock_requests_total counter", "airlock_request_duration_seconds histogram",
        "airlock_tunnel_duration_seconds histogram", "airlock_request_bytes_total counter",
        "airlock_connections_active gauge", "airlock_connections_total counter",
        "airlock_tunnels_active gauge", "airlock_upstream_connect_duration_seconds histogram",
        "airlock_upstream_tls_handshake_duration_seconds histogram",
        "airlock_upstream_errors_total counter", "airlock_upstream_pool_total counter",
        "airlock_tls_leaf_mints_total counter", "airlock_tls_leaf_cache_hits_total counter",
        "airlock_policy_reloads_total counter", "airlock_policy_reload_failures_total counter",
        "airlock_policy_info gauge", "airlock_policy_last_reload_success_timestamp_seconds gauge",
        "airlock_build_info gauge"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + "\n"), std::string::npos) << family;
  }
  EXPECT_NE(text.find(R"(airlock_requests_total{agent="coder",decision="allow",protocol="h1",)"
                      R"(reason="ok",rule="github"} 2)"),
            std::string::npos)
      << text;
}

TEST(Metrics, PromtoolAcceptsTheExposition) {
  const char* promtool = "/usr/bin/promtool";
  if (::access(promtool, X_OK) != 0)
    AIRLOCK_SKIP_UNLESS_CI("promtool not installed (package prometheus)");
  metrics m("1.2.3");
  populate(m);
  // Label values that need escaping in the text format (agent names come from the policy).
  m.request_finished("we\"ird\\agent\nname", "r", "allow", "ok", 1ms, 1, 1);
  char tmpl[] = "/tmp/airlock-metrics-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(tmpl, std::ios::binary);
    out << m.serialize();
  }
  std::string cmd = std::string(promtool) + " check metrics < " + tmpl + " 2>&1";
  std::string output;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p))
    output.append(buf, n);
  int status = ::pclose(p);
  std::filesystem::remove(tmpl);
  EXPECT_EQ(status, 0) << output;
}

}  // namespace
}  // namespace airlock::telemetry
