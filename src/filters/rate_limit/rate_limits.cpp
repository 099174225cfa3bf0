#include "filters/rate_limit/rate_limits.hpp"

#include "core/str_cat.hpp"

#include <algorithm>
#include <limits>

namespace airlock::filters::rate_limit {

std::int64_t to_ns(std::chrono::milliseconds ms) noexcept {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(static_cast<std::int64_t>(ms.count()), std::int64_t{1'000'000}, &r))
    return ms.count() > 0 ? std::numeric_limits<std::int64_t>::max() : 0;
  return r;
}

std::int64_t time_between(std::int64_t now_ns, std::int64_t until_ns) noexcept {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(until_ns, now_ns, &r))
    return until_ns > now_ns ? std::numeric_limits<std::int64_t>::max()
                             : std::numeric_limits<std::int64_t>::min();
  return r;
}

std::int64_t store_wait_ns(std::int64_t count, std::int64_t unit_ns) noexcept {
  if (count <= 0 || unit_ns <= 0) return 0;
  if (count >= max_store_wait_ns / unit_ns) return max_store_wait_ns;
  return count * unit_ns;
}

std::int64_t time_after(std::int64_t now_ns, std::int64_t span_ns) noexcept {
  std::int64_t r = 0;
  if (__builtin_add_overflow(now_ns, span_ns, &r))
    return span_ns > 0 ? std::numeric_limits<std::int64_t>::max()
                       : std::numeric_limits<std::int64_t>::min();
  return r;
}

std::uint32_t seconds_ceil(std::int64_t ns) noexcept {
  if (ns <= 0) return 0;
  const std::int64_t s = ns / ns_per_second + (ns % ns_per_second != 0 ? 1 : 0);
  return s > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                       : static_cast<std::uint32_t>(s);
}

rate_limits rate_limits::compile(const policy::model::rate& r) {
  rate_limits l;
  l.source = r;
  l.requests = gcra_params::requests(r.requests, to_ns(r.per), r.burst);
  l.requests_per_hour = gcra_params::requests(r.requests_per_hour, ns_per_hour);
  l.bytes_per_hour = gcra_params::bytes(r.bytes_per_hour, ns_per_hour);
  // "Throttled with a one-second burst": a body may arrive this many bytes at once after a
  // quiet second, and no faster than the rate on average.
  l.upload = gcra_params::bytes(r.upload_bytes_per_second, ns_per_second);
  l.download = gcra_params::bytes(r.download_bytes_per_second, ns_per_second);
  l.concurrent = r.concurrent;
  l.bytes = l.upload.enabled() || l.download.enabled() || l.bytes_per_hour.enabled();
  l.any = l.requests.enabled() || l.requests_per_hour.enabled() || l.bytes || l.concurrent != 0;
  return l;
}

rate_limits rate_limits::compile_share(const policy::model::rate& r, std::uint32_t replicas) {
  if (replicas <= 1) return compile(r);
  policy::model::rate share = r;
  const auto part = [replicas](std::uint64_t v) -> std::uint64_t {
    return v == 0 ? 0 : std::max<std::uint64_t>(v / replicas, 1);
  };
  share.requests = part(r.requests);
  share.burst = part(r.burst);
  share.requests_per_hour = part(r.requests_per_hour);
  share.bytes_per_hour = part(r.bytes_per_hour);
  rate_limits l = compile(share);
  l.source = r;  // refusals name the limit as written
  return l;
}

std::string rate_limits::requests_label() const {
  if (!source.requests_key.empty()) return core::str_cat(source.requests_key, "=", source.requests);
  if (source.per == std::chrono::seconds(1))
    return core::str_cat("requests_per_second=", source.requests);
  if (source.per == std::chrono::minutes(1))
    return core::str_cat("requests_per_minute=", source.requests);
  return core::str_cat("requests=", source.requests, "/", source.per.count(), "ms");
}

}  // namespace airlock::filters::rate_limit
