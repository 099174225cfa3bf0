#include "filters/validation/headers.hpp"

#include "core/ascii.hpp"

#include <re2/re2.h>

#include <string_view>

namespace airlock::filters::validation {
using core::trim_ows;
namespace {}  // namespace

std::optional<violation> check_headers(const policy::compiled_headers& checks,
                                       const boost::beast::http::fields& fields) {
  if (!checks.any()) return std::nullopt;
  for (const std::string& name : checks.required)
    if (fields.find(name) == fields.end()) return header_violation(name, "required");
  for (const std::string& name : checks.forbidden) {
    auto it = fields.find(name);
    if (it != fields.end()) return header_violation(it->name_string(), "forbidden");
  }
  for (const auto& p : checks.patterns) {
    auto [it, end] = fields.equal_range(p.name);
    for (; it != end; ++it) {
      const std::string_view raw = it->value();
      if (raw.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
        return header_violation(it->name_string(), "encoding");
      if (!re2::RE2::FullMatch(trim_ows(raw), *p.pattern))
        return header_violation(it->name_string(), pattern_constraint(p.pattern->pattern()));
    }
  }
  return std::nullopt;
}

}  // namespace airlock::filters::validation
