#pragma once
// What DLP takes out of an exchange's record, and of a refusal's answer, before they repeat
// what the agent chose: the host, the path, the method, a detail that quotes a name the agent
// sent (an unknown query parameter, a tool, a TLS server name), a protocol answer. A refusal
// by a filter before DLP (the decision, validation, MCP) or by the session after the head
// hooks (a tunnel's SNI) would otherwise record a secret the same request, allowed, would have
// had redacted. Each function reads its text with the rule's scanner and returns the text to
// keep, or nothing when it holds no finding.
//
// @par Thread Safety
// Pure functions over an immutable scanner.

#include "filters/dlp/scanner.hpp"
#include "filters/exchange.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

inline constexpr std::string_view kRedacted = "[REDACTED:dlp]";

// `path` with each '/'-separated segment that holds a finding replaced by kRedacted; the whole
// path replaced when no one segment holds it (a secret split across segments).
std::string redact_segments(const scanner& s, std::string_view path);

// A host name kept to its last two labels: where it went, without what it carried.
std::string redacted_host(std::string_view host);

// The path as recorded, when it holds a finding.
std::optional<std::string> scrub_path(const scanner& s, std::string_view path);

// The host as recorded, when it holds a finding (read as DLP reads a request's host:
// as sent, upper-cased, its labels joined; head_places.hpp).
std::optional<std::string> scrub_host(const scanner& s, std::string_view host);

// A method token that holds a finding (the agent's when the rule lists no methods).
std::optional<std::string> scrub_method(const scanner& s, std::string_view method);

// Free text that may quote what the agent sent (a refusal's detail, a protocol answer's body).
struct scrubbed_text {
  enum class outcome {
    clean,     // nothing found: keep the text
    cut,       // each match of the scanner's redactors replaced: `text`
    withheld,  // found, but not where a redactor matches (decoded, upper-cased): drop it all
  };
  outcome what = outcome::clean;
  std::string text;
};
// Read as sent and upper-cased (a host name, lower-cased on the way in, may quote a key that is
// upper case only); each redactor match is replaced by "[REDACTED:class]" and the rest read
// again: what is still found cannot be cut out, and the text is withheld.
scrubbed_text scrub_text(const scanner& s, std::string_view text);

// What one exchange's record was read for already, so that reading it again (each refusal, then
// the end) reads only what changed.
struct record_scrub_state {
  bool head_read = false;   // the host, path and method (DLP's head hook, or a scrub) were read
  std::string detail_read;  // the detail as it was last left
  const protocol_answer* answer_read = nullptr;
};
// Scrubs `rec`: its host, path and method unless `state.head_read`; its detail; its protocol
// answer (cut, or dropped for the proxy's text answer when withheld). Fails closed: when a
// reading throws, the fields are withheld whole.
void scrub_record(const scanner& s, exchange_record& rec, record_scrub_state& state) noexcept;

}  // namespace airlock::filters::dlp
