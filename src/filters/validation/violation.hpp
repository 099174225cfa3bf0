#pragma once
// Why a request breaks its rule's parameter checks. Carries names and constraints only, never
// a request value: a refused value may be the very secret an agent tried to send out, and the
// detail ends up in the Proxy-Status header, the audit log and the server log.

#include "core/errc.hpp"

#include <string>
#include <string_view>

namespace airlock::filters::validation {

struct violation {
  // query_denied, header_denied or body_denied.
  core::errc reason = core::errc::internal_error;
  // What broke the rule: "query per_page", "header cookie", "body field user.name", or "body"
  // for the body as a whole. Names are printable ASCII of bounded length (see printable()).
  std::string parameter;
  // Which constraint: "required", "forbidden", "unknown parameter", "encoding",
  // "pattern <re>", "type <t>", "enum", "max_length <n>", "minimum <x>", "maximum <x>",
  // "valid JSON", "max depth <n>", "duplicate key", "exact name".
  std::string constraint;

  // One sentence: "query parameter 'per_page' breaks pattern '^[0-9]{1,3}$'".
  std::string detail() const;
};

// Builders that make the name printable and bounded (the name may be chosen by the agent).
violation query_violation(std::string_view name, std::string constraint);
violation header_violation(std::string_view name, std::string constraint);
violation body_field_violation(std::string_view field, std::string constraint);
violation body_violation(std::string constraint);  // the body as a whole
// "pattern <re>", with the pattern made printable and bounded too.
std::string pattern_constraint(std::string_view pattern);

}  // namespace airlock::filters::validation
