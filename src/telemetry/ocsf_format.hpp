#pragma once
// `audit.format: ocsf`: the audit records as OCSF 1.1.0 events (Open Cybersecurity Schema
// Framework, schema.ocsf.io/1.1.0), one JSON object per line, for SIEMs that ingest OCSF:
//
// - an HTTP exchange: HTTP Activity (class_uid 4002, category 4 Network Activity), activity_id
//   from the method (1 Connect ... 8 Trace, 99 Other);
// - a CONNECT tunnel (scheme "connect"): Network Activity (class_uid 4001), activity_id 2 Close
//   (it is recorded when it ends), 5 Refuse when it was denied, 4 Fail on an error;
// - an operator's action or an approval's event (audit_event): API Activity (class_uid 6003,
//   category 6 Application Activity): 1 Create (a hold or access request is made), 3 Update
//   (approve, refuse, stop, resume, reload), 4 Delete (a hold ended without a decision).
//
// Airlock's own fields without an OCSF attribute (agent, rule, decision, reason, policy
// version, ...) are under `unmapped`. docs/operations.md lists the attributes written.
//
// Thread safety: pure functions.

#include "telemetry/audit_event.hpp"
#include "telemetry/audit_log.hpp"

#include <string>

namespace airlock::telemetry {

inline constexpr std::string_view ocsf_version = "1.1.0";

// Appends the record as one OCSF event and a '\n'. May throw std::bad_alloc.
void append_ocsf_line(std::string& out, const audit_record& r);
void append_ocsf_line(std::string& out, const audit_event& e);

}  // namespace airlock::telemetry
