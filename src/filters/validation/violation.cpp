#include "filters/validation/violation.hpp"

#include "core/str_cat.hpp"
#include "filters/validation/text.hpp"

#include <utility>

namespace airlock::filters::validation {
namespace {

bool starts_with(std::string_view s, std::string_view prefix, std::string_view& rest) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  rest = s.substr(prefix.size());
  return true;
}

}  // namespace

std::string violation::detail() const {
  std::string_view rest;
  std::string subject;
  if (starts_with(parameter, "query ", rest))
    subject = core::str_cat("query parameter '", rest, "'");
  else if (starts_with(parameter, "header ", rest))
    subject = core::str_cat("header '", rest, "'");
  else if (starts_with(parameter, "body field ", rest))
    subject = core::str_cat("body field '", rest, "'");
  else
    subject = parameter;

  const std::string_view c = constraint;
  if (c == "required") return subject + " is missing";
  if (c == "forbidden") return subject + " is forbidden";
  if (c == "unknown parameter") return subject + " is not allowed";
  if (c == "encoding") return subject + " is not validly encoded";
  if (c == "valid JSON") return subject + " is not valid JSON";
  if (c == "duplicate key") return subject + " appears more than once";
  if (c == "exact name") return subject + " must be spelt exactly (a case variant was sent)";
  if (starts_with(c, "pattern ", rest))
    return core::str_cat(subject, " breaks pattern '", rest, "'");
  if (starts_with(c, "type ", rest)) return core::str_cat(subject, " is not of type ", rest);
  if (starts_with(c, "max depth ", rest))
    return core::str_cat(subject, " is nested deeper than ", rest, " levels");
  return core::str_cat(subject, " breaks ", c);
}

violation query_violation(std::string_view name, std::string constraint) {
  return {core::errc::query_denied, "query " + printable(name), std::move(constraint)};
}

violation header_violation(std::string_view name, std::string constraint) {
  return {core::errc::header_denied, "header " + printable(name), std::move(constraint)};
}

violation body_field_violation(std::string_view field, std::string constraint) {
  return {core::errc::body_denied, "body field " + printable(field), std::move(constraint)};
}

violation body_violation(std::string constraint) {
  return {core::errc::body_denied, "body", std::move(constraint)};
}

std::string pattern_constraint(std::string_view pattern) {
  return "pattern " + printable(pattern, 128);
}

}  // namespace airlock::filters::validation
