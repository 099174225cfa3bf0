#pragma once
// Formatting of one audit record as one JSON line (the audit_log's hot path, separated so it can
// be tested without a file). Exposed for tests and for tools that want the same line format.
//
// Thread safety: pure functions.

#include "telemetry/audit_log.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace airlock::telemetry {

// Appends `record` as a single-line JSON object followed by '\n' to `out`. Keys, in this order:
// time, agent, method, scheme, host, port, path, rule (null when empty), decision, reason,
// detail, status, bytes_in, bytes_out, duration_ms, upstream, client, policy_version.
// Invalid UTF-8 in any string is replaced by U+FFFD so that every line is valid JSON
// (RFC 8259 section 8.1). May throw std::bad_alloc.
void append_audit_line(std::string& out, const audit_record& record);

// "2024-05-01T12:34:56.789Z": RFC 3339 section 5.6 date-time in UTC with milliseconds. Times
// outside years 0000..9999 are clamped to that range (RFC 3339 has four-digit years).
void append_rfc3339_utc(std::string& out, std::chrono::system_clock::time_point t);

// Appends `s` as a JSON string literal (quotes included), escaped by Boost.JSON's serializer.
void append_json_string(std::string& out, std::string_view s);

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

}  // namespace airlock::telemetry
