#pragma once
// Held requests (`rules[i].ask`, the policy-wide `approvals:` section): a request that a rule
// marks `ask` (or, with ask_unmatched, one that no rule allows) waits for an operator's decision
// on the admin port. Kept out of model.hpp so the section has one home (parser: parser.cpp;
// filter: filters/approval/; docs: docs/policy.md "approvals").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace airlock::policy::model {

// `rules[i].ask: true` or `ask: {timeout: 30s}`: every request this rule allows is held for an
// operator first (unless a grant covers it).
struct ask {
  bool on = false;
  std::optional<std::chrono::milliseconds> timeout;  // unset: approvals.timeout
};

// `operators: {NAME: {token_sha256: HEX}}`: who may act on the admin port (approve, refuse,
// stop, resume, reload). A Bearer token whose SHA-256 is listed names its operator; when none
// is configured, mutations are accepted from a loopback peer only (docs/operations.md).
struct operator_token {
  std::string name;
  std::string token_sha256;  // lower-case hex after compiling
};

struct approvals {
  // Requests no rule allows are held for a decision instead of being refused at once.
  bool ask_unmatched = false;
  std::chrono::milliseconds timeout{120'000};  // no decision by then: approval_timeout (403)
  std::uint32_t max_held_per_agent = 8;        // more held at once: approval_limit (429)
  std::uint32_t max_held_total = 256;
  // The file `permanent` approvals are written to (rules and agents' rule lists, see
  // include_parser.hpp). The policy must include it (`include:`); it may not exist yet.
  std::string overlay;
  // Agents may ask for access first at http://airlock.internal/request-access (a pending
  // approval like a held request, within the same bounds).
  bool access_requests = false;
};

}  // namespace airlock::policy::model
