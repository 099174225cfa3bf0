#pragma once
// The Lua scripts that keep the fleet's buckets in Redis (EVAL: "Redis runs a script
// atomically", https://redis.io/docs/interact/programmability/eval-intro/). Each bucket is one
// key holding its GCRA theoretical arrival time (gcra.hpp) in microseconds of the Redis
// server's own clock (TIME), so that the replicas' clocks do not matter.
//
//   acquire KEYS[1] ARGV = interval_us, capacity_us, want
//     -> {granted, retry_after_us}: up to `want` units that fit now (0 and the wait for one
//        when none fits). The key expires once the bucket would be full again.
//   refund  KEYS[1] ARGV = interval_us, count
//     -> 1: gives back units leased and not used, as if they had never been taken (the
//        bucket never goes above full: a TAT before now is the same as now).
//   charge  KEYS[1] ARGV = cost_us, capacity_us
//     -> wait_us: adds `cost` to a byte quota after the fact, going into debt if need be, up
//        to one whole bucket (as gcra::charge does locally; cost 0 only reads), and answers
//        how long until the quota has room again (0: it has now).

#include <string_view>

namespace airlock::filters::rate_limit::scripts {

inline constexpr std::string_view acquire = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local fit = math.floor((capacity - (tat - now)) / interval + 1e-9)
if fit > want then fit = want end
if fit < 1 then
  return {0, math.ceil(tat + interval - capacity - now)}
end
tat = tat + fit * interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
return {fit, 0}
)lua";

inline constexpr std::string_view refund = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
tat = tat - tonumber(ARGV[1]) * tonumber(ARGV[2])
if tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
return 1
)lua";

inline constexpr std::string_view charge = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if cost > 0 then
  local before = tat
  tat = math.max(math.min(tat + cost, now + 2 * capacity), before)
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
local wait = tat - capacity - now
if wait < 0 then wait = 0 end
return math.ceil(wait)
)lua";

}  // namespace airlock::filters::rate_limit::scripts
