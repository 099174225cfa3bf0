#include "filters/validation/validation_filter.hpp"

#include "core/str_cat.hpp"
#include "filters/validation/headers.hpp"
#include "filters/validation/json_body.hpp"
#include "filters/validation/query.hpp"
#include "policy/snapshot.hpp"

namespace airlock::filters::validation {
namespace {

class validation_filter final : public filter {
 public:
  verdict on_request_head(exchange& ex) override {
    const auto& checks = ex.rule->checks;
    std::optional<violation> broken;
    if (checks.query.active) broken = check_query_of(ex, checks.query);
    if (!broken && checks.headers.any()) broken = check_headers(checks.headers, *ex.request);
    if (checks.body.max_bytes && *checks.body.max_bytes < ex.body_limit) {
      ex.body_limit = *checks.body.max_bytes;
      if (!broken && ex.content_length.value_or(0) > ex.body_limit)
        return verdict::refuse(
            core::errc::body_too_large,
            core::str_cat("rule ", ex.rule->name, " allows ", ex.body_limit, " bytes of body"));
    }
    if (broken) return verdict::violation(broken->reason, broken->detail());
    return verdict::next();
  }

  body_use request_body_use(const exchange& ex) const override {
    return ex.rule->checks.needs_body() ? body_use::whole : body_use::none;
  }

  verdict on_request_body(exchange& ex, std::string_view body, bool) override {
    if (auto broken = check_json(ex.rule->checks.body, body))
      return verdict::violation(broken->reason, broken->detail());
    return verdict::next();
  }

 private:
  // Unknown parameters stripped: the origin sees the others, as they were written.
  static std::optional<violation> check_query_of(exchange& ex, const policy::compiled_query& q) {
    auto& target = ex.path_and_query;
    const auto mark = target.find('?');
    const std::string_view raw =
        mark == std::string::npos ? std::string_view{} : std::string_view(target).substr(mark + 1);
    std::optional<std::string> rewritten;
    auto broken = check_query(q, raw, rewritten);
    if (!broken && rewritten) {
      target.resize(mark);
      if (!rewritten->empty()) target += core::str_cat("?", *rewritten);
    }
    return broken;
  }
};

}  // namespace

filter* validation_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  if (ex.connect) return nullptr;
  return make<validation_filter>(arena);
}

}  // namespace airlock::filters::validation
