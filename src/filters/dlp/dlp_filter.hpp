#pragma once
// Outbound DLP as a filter (issue 16). Under a rule with `dlp` (or the policy-wide default):
//   - the host: on the policy's `blocklist` (host_blocklisted), or with data-like labels
//     (hostname_exfiltration; net/data_like_host.hpp) unless a rule names it exactly; also for
//     CONNECT;
//   - the method, the URL (host labels, path, query, each value and the values joined), header
//     names (also upper-cased) and values and cookies, in on_request_head; request trailers
//     likewise, in on_trailers;
//   - the body: held whole up to the rule's max_body_bytes (a finding refuses it before any
//     byte goes on), streamed above that: each piece read before it goes on, after a carry of
//     the ones before it so that a secret split across pieces is still found.
//   - with `responses` set, the answer read for prompt injection (response_reading.hpp): a
//     text body held up to max_body_bytes and judged, then withheld behind a marker line,
//     passed or annotated; a gRPC or protobuf answer message by message, and the origin's
//     WebSocket messages, refused (injection_blocked) under block.
// Each finding goes into the record (class, location, action). Action block: 403 dlp_blocked
// with the classes in Proxy-Status (a violation: mode report records it instead); report: the
// request goes on.

#include "filters/filter.hpp"
#include "filters/redaction/redactor.hpp"
#include "policy/dlp.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::dlp {

class scanner;
struct scanner_config;

// What a scanner for `cfg` (null: the default classes) reads under `snapshot`: its classes, and
// the policy's custom redactors, secrets and placeholders, and the `retired` values of its
// secrets (redaction/retired_secrets.hpp: a rotated credential may stay valid at its provider).
scanner_config scanner_config_for(const policy::snapshot& snapshot,
                                  const policy::model::dlp_config* cfg,
                                  std::span<const redaction::literal_secret> retired = {});

// The scanners of one snapshot: one per distinct class list, and each rule's effective
// configuration (its own `dlp`, else the policy-wide one, else none).
struct dlp_plan {
  struct rule_plan {
    const policy::model::dlp_config* config = nullptr;  // null: no DLP under this rule
    std::shared_ptr<const scanner> scan;
  };
  std::vector<rule_plan> rules;  // by compiled_rule::index
  // A request no rule allows that an operator may still let through (ask_unmatched, an
  // access grant), and an agent's access request: the policy-wide `dlp`, since no rule's own
  // applies and what they carry is shown to the operator and recorded.
  rule_plan unmatched;
  std::vector<policy::model::blocked_host> blocklist;
  bool any_rule = false;  // some rule scans: every exchange gets the filter

  struct build_result {
    std::shared_ptr<const dlp_plan> plan;
    std::vector<std::string> errors;
  };
  static build_result build(const policy::snapshot& snapshot,
                            std::span<const redaction::literal_secret> retired = {});
};

class dlp_factory final : public filter_factory {
 public:
  explicit dlp_factory(std::shared_ptr<const dlp_plan> plan) : plan_(std::move(plan)) {}
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::shared_ptr<const dlp_plan> plan_;
};

// Whether `host` is on the blocklist (exact, or under a "*.suffix" entry, or the suffix itself).
bool blocklisted(const std::vector<policy::model::blocked_host>& list, std::string_view host);

}  // namespace airlock::filters::dlp
