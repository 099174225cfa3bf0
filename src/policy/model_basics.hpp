#pragma once
// The small value types several policy sections share (a key's position, a rate, a JSON field
// constraint), apart from model.hpp so that a section kept in a header of its own (mcp.hpp)
// can use them without the whole model.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::policy::model {

using std::chrono::milliseconds;

// Where a key stood in the file, for error messages found after parsing.
struct mark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
  // The included file it stood in (`include:`); null: the file being loaded. An error found
  // by the compiler in an included rule names that file, not the one that included it.
  std::shared_ptr<const std::string> file{};
};

// Token buckets and quotas, for an agent as a whole (`agents.X.rate`) or for each agent on one
// rule (`rules[i].rate`: every agent gets its own buckets for that rule). 0 = no such limit.
struct rate {
  // Requests: a bucket of `burst` tokens refilled at `requests` per `per`.
  std::uint64_t requests = 0;
  milliseconds per{1'000};   // 1s (requests_per_second) or 60s (requests_per_minute)
  std::string requests_key;  // "requests_per_second" or "requests_per_minute", for messages
  std::uint64_t burst = 0;   // 0 = one period's worth (`requests`), at least 1
  // Bytes of bodies, throttled (delayed, never refused) to this rate with a one-second burst.
  std::uint64_t upload_bytes_per_second = 0;    // request bodies (agent -> origin)
  std::uint64_t download_bytes_per_second = 0;  // response bodies (origin -> agent)
  std::uint32_t concurrent = 0;                 // requests and tunnels in flight at once
  // Quotas over a sliding hour (a bucket of the hour's allowance refilled continuously).
  std::uint64_t requests_per_hour = 0;
  std::uint64_t bytes_per_hour = 0;  // request + response bodies
  bool any() const noexcept {
    return requests || upload_bytes_per_second || download_bytes_per_second || concurrent ||
           requests_per_hour || bytes_per_hour;
  }
};

enum class json_type { any, string, number, integer, boolean, object, array, null };

// One constrained field of a JSON request body, addressed by a dotted path from the root
// object ("model", "options.temperature").
struct json_field {
  std::string path;
  json_type type = json_type::any;
  std::string pattern;                      // re2, full match; strings only
  std::vector<std::string> enum_values;     // allowed values (strings, integers or booleans)
  std::optional<std::uint64_t> max_length;  // characters of a string, elements of an array
  std::optional<double> minimum;            // numbers only
  std::optional<double> maximum;
  bool required = false;
};

}  // namespace airlock::policy::model
