#pragma once
// One `rate:` block of the policy (an agent's, or a rule's for each agent on it) compiled into
// bucket numbers, and the state those numbers act on. The numbers belong to a plan (one per
// policy snapshot); the state belongs to the registry and outlives reloads.

#include "filters/rate_limit/breaker.hpp"
#include "filters/rate_limit/concurrency_gate.hpp"
#include "filters/rate_limit/gcra.hpp"
#include "policy/model.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace airlock::filters::rate_limit {

inline constexpr std::int64_t ns_per_second = 1'000'000'000;
inline constexpr std::int64_t ns_per_hour = 3'600 * ns_per_second;

// Milliseconds from the policy as nanoseconds, saturated (a duration cannot overflow).
std::int64_t to_ns(std::chrono::milliseconds ms) noexcept;

// until - now, saturated (both are arbitrary clock readings).
std::int64_t time_between(std::int64_t now_ns, std::int64_t until_ns) noexcept;

// A wait the shared store answered (a count of `unit_ns`: 1'000 for the scripts' microseconds,
// 1'000'000 for PTTL and control messages' milliseconds) as nanoseconds, clamped to
// [0, max_store_wait_ns] before it is scaled: the store's numbers are int64 and a wait past the
// cap (a peer that is not Redis, a forged control message) is a long refusal, never an overflow
// that reads as "no wait".
inline constexpr std::int64_t max_store_wait_ns = 366 * 24 * ns_per_hour;
std::int64_t store_wait_ns(std::int64_t count, std::int64_t unit_ns) noexcept;
// now + span, saturated.
std::int64_t time_after(std::int64_t now_ns, std::int64_t span_ns) noexcept;

// Whole seconds, rounded up, for Retry-After and admin views; 0 for a span <= 0.
std::uint32_t seconds_ceil(std::int64_t ns) noexcept;

struct rate_limits {
  gcra_params requests;           // requests per period, with a burst
  gcra_params requests_per_hour;  // quota: T = 1h / N, burst N
  gcra_params bytes_per_hour;     // quota on request + response bodies, charged afterwards
  gcra_params upload;             // request-body bytes per second, one second of burst
  gcra_params download;           // response-body bytes per second, one second of burst
  std::uint32_t concurrent = 0;   // 0 = not capped (and not counted)
  policy::model::rate source;     // for the names of refused limits
  bool any = false;               // any of the above
  bool bytes = false;             // upload, download or bytes_per_hour

  static rate_limits compile(const policy::model::rate& r);
  // The same limits divided among `replicas` (each at least 1 where set): what one replica
  // enforces alone when the shared store is unavailable (on_unavailable: local).
  static rate_limits compile_share(const policy::model::rate& r, std::uint32_t replicas);

  // "requests_per_minute=600": the key and value of the request bucket, as the policy says it.
  std::string requests_label() const;
};

// What one rate_limits acts on. Shared (through the registry) by every plan whose policy has
// the same agent, or the same agent and rule, by name.
struct lease;
struct byte_tally;

struct bucket_state {
  // state: redis: this replica's leases on the fleet's request buckets (shared_store.hpp); null
  // when the limit is not set or the state is local. Made by the registry at bind.
  std::shared_ptr<lease> shared_requests;
  std::shared_ptr<lease> shared_requests_per_hour;
  std::shared_ptr<byte_tally> shared_bytes_per_hour;  // what this replica counted, unreported
  gcra requests;
  gcra requests_per_hour;
  gcra bytes_per_hour;
  gcra upload;
  gcra download;
  concurrency_gate gate;
};

struct agent_state {
  bucket_state buckets;
  rate_limit::breaker breaker;  // also holds the operator's kill switch
};

}  // namespace airlock::filters::rate_limit
