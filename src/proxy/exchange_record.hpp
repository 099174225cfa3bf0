#pragma once
// What happened to one request, filled in as the exchange proceeds and written out once
// (audit line + metrics) when it goes out of scope, so refused and failed exchanges are
// recorded exactly like successful ones.

#include "core/errc.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::rate_limit {
class plan;
}

namespace airlock::proxy {

class worker;

class exchange_record {
 public:
  exchange_record(worker& w, std::string_view client, std::string_view policy_version);
  ~exchange_record();
  exchange_record(const exchange_record&) = delete;
  exchange_record& operator=(const exchange_record&) = delete;

  // The connection closed before a request started: record nothing.
  void skip() noexcept { skipped_ = true; }
  // The proxy answers this exchange itself, for this reason.
  void refuse(core::errc why, std::string why_detail) {
    reason = why;
    detail = std::move(why_detail);
  }
  // Report mode: the request goes through, recorded as what would have been refused.
  void report(core::errc would_refuse, std::string why);
  // The upstream failed (DNS, connect, TLS, response): decision "error".
  void failed_upstream(core::errc why);
  // Connecting failed: the address guard's refusal is a policy denial, anything else an
  // upstream failure.
  void connect_failed(core::errc why) {
    if (why == core::errc::destination_ip_prohibited)
      reason = why;
    else
      failed_upstream(why);
  }

  std::string agent = "-";
  std::string method;
  std::string scheme = "http";
  std::string host;
  std::uint16_t port = 0;
  std::string path;
  std::string rule;
  core::errc reason = core::errc::ok;
  std::string detail;
  unsigned status = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::string upstream;
  std::chrono::microseconds connect_time{0};
  // Credentials and redaction: names of the secrets injected, and each redactor's hit count.
  std::vector<std::string_view> injected;  // point into the snapshot (which outlives the record)
  std::vector<std::pair<std::string_view, std::uint64_t>> redactions;  // into the engine, ditto
  std::uint32_t retry_after = 0;  // seconds, for a Retry-After header on a 429 (0 = none)
  // Set once the agent is known: a refusal or upstream error then counts towards the agent's
  // circuit breaker. The plan outlives the record (the session holds it).
  const filters::rate_limit::plan* controls = nullptr;
  std::size_t agent_index = 0;

 private:
  worker& worker_;
  std::string_view client_;
  std::string_view policy_version_;
  std::chrono::system_clock::time_point wall_start_;
  std::chrono::steady_clock::time_point start_;
  bool skipped_ = false;
  bool reported_ = false;
  bool upstream_failed_ = false;
};

}  // namespace airlock::proxy
