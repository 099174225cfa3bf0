#pragma once
// Private to the policy component: the compiled matching state of one rule, and the evaluation
// of one rule against one target, shared by snapshot::decide() and explain().
//
// Thread safety: immutable after compilation.

#include "policy/snapshot.hpp"

#include <re2/re2.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace airlock::policy {

// Heterogeneous lookup: find a std::string_view in a set of std::string without allocating.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

struct compiled_rule::matcher {
  // Normalised exact names and IP literals (net::normalized_host::text).
  std::unordered_set<std::string, string_hash, std::equal_to<>> exact;
  // "*.example.com" as written (after normalisation) and as matched: ".example.com".
  struct suffix {
    std::string pattern;
    std::string dot_suffix;
  };
  std::vector<suffix> suffixes;
  std::vector<std::unique_ptr<re2::RE2>> host_regex;
  std::vector<std::string> methods;              // empty = any
  std::vector<std::unique_ptr<re2::RE2>> paths;  // empty = any
};

// How one rule treats one target. reason is ok when the rule allows it; host_denied when the
// host does not match; otherwise the first check that failed, in the order port, inspection
// (CONNECT only), upgrade, method, path: the later the check, the more specific the refusal.
struct rule_outcome {
  core::errc reason = core::errc::host_denied;
  // What matched the host: the exact name, the "*.suffix" pattern or the regex pattern.
  // Points into the rule; empty when the host did not match.
  std::string_view host_matched_by;
  // Set for path_denied when the path has dot segments ("/a/../b"), which a server would
  // resolve after our check (RFC 3986 section 5.2.4); such paths never satisfy `paths`.
  bool dot_segments = false;
};

rule_outcome evaluate_rule(const compiled_rule& rule, const request_target& target) noexcept;

// Rank of a refusal for "most specific" (higher wins); 0 for host_denied and ok.
int refusal_rank(core::errc reason) noexcept;

}  // namespace airlock::policy
