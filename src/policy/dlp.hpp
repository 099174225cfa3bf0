#pragma once
// Outbound data-loss prevention as the policy writes it (issue 16): a rule's `dlp` key, the
// policy-wide `dlp` default, and the `blocklist` of hosts no rule can open. Kept apart from
// model.hpp so that the other controls' keys and these merge without touching each other.

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::policy::model {

// What a finding does to its request.
enum class dlp_action : std::uint8_t {
  block,   // 403 dlp_blocked (report mode records it instead)
  report,  // the request goes through; the audit record and the metric carry the finding
  redact,  // a body held whole is forwarded with the findings replaced; what cannot be
           // rewritten (URL, headers, a streamed body, an encoded secret) is blocked
};

// What prompt-injection scanning of text responses does (`dlp.responses`).
enum class response_action : std::uint8_t {
  off,       // responses are not scanned
  block,     // the body is replaced by a marker line ("[airlock: response withheld: ...]")
  report,    // the body passes; the finding is recorded
  annotate,  // the body passes behind a warning line
};

// `dlp: {action, classes, entropy, hostnames, max_body_bytes, responses}` (also `dlp: off` under a
// rule, to opt out of the policy-wide default).
struct dlp_config {
  bool present = false;  // the key is written (policy-wide or under this rule)
  bool off = false;      // `dlp: off`: no scanning under this rule
  dlp_action action = dlp_action::block;
  // Detector classes (built-in redactor names, custom redactor names, "seed-phrase",
  // "bitcoin-address", ...). Empty = the default set (see docs/policy.md).
  std::vector<std::string> classes;
  bool entropy = false;   // also report high-entropy tokens (class "high-entropy")
  bool hostnames = true;  // refuse data-like host labels (hostname_exfiltration)
  std::uint64_t max_body_bytes = 1024 * 1024;        // held whole up to this; streamed above
  response_action responses = response_action::off;  // prompt injection in text responses
};

// A host no rule may reach: an exact name / IP literal, or "*.suffix" (names under the suffix
// and the suffix itself).
struct blocked_host {
  std::string text;       // normalised
  bool wildcard = false;  // "*.suffix"
  std::string suffix;     // "example.net" for "*.example.net"
};

}  // namespace airlock::policy::model
