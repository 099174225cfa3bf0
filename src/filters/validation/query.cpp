#include "filters/validation/query.hpp"

#include "filters/validation/text.hpp"

#include <re2/re2.h>

#include <algorithm>

namespace airlock::filters::validation {
namespace {

using model_unknown = policy::model::unknown_params;

struct piece {
  std::string_view all;  // "name=value" as sent
  std::string_view name;
  std::string_view value;
};

// Calls f(piece) for every non-empty '&'-separated piece; stops when f returns false.
template <typename F>
void for_each_piece(std::string_view query, F&& f) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view all = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (all.empty()) continue;
    const std::size_t eq = all.find('=');
    piece p{all, all.substr(0, eq),
            eq == std::string_view::npos ? std::string_view{} : all.substr(eq + 1)};
    if (!f(p)) return;
  }
}

const policy::compiled_query_param* find_param(const policy::compiled_query& q,
                                               std::string_view name) {
  auto it = std::lower_bound(q.params.begin(), q.params.end(), name,
                             [](const auto& p, std::string_view n) { return p.name < n; });
  return it != q.params.end() && it->name == name ? &*it : nullptr;
}

bool has_lenient_variant(const policy::compiled_query& q, std::string_view name) {
  return std::any_of(q.params.begin(), q.params.end(),
                     [&](const auto& p) { return lenient_name_equal(name, p.name); });
}

}  // namespace

std::optional<violation> check_query(const policy::compiled_query& checks,
                                     std::string_view raw_query,
                                     std::optional<std::string>& rewritten) {
  rewritten.reset();
  if (!checks.active) return std::nullopt;

  std::string name_buf, value_buf;  // used only for names and values that need decoding
  std::optional<violation> found;
  bool strip = false;
  for_each_piece(raw_query, [&](const piece& p) {
    const auto name = form_decode(p.name, name_buf);
    if (!name) {
      found = query_violation(p.name, "encoding");
      return false;
    }
    const policy::compiled_query_param* param = find_param(checks, *name);
    if (!param) {
      if (checks.unknown == model_unknown::refuse ||
          (checks.unknown == model_unknown::allow && has_lenient_variant(checks, *name))) {
        found = query_violation(*name, "unknown parameter");
        return false;
      }
      if (checks.unknown == model_unknown::strip) {
        strip = true;
        return true;  // removed unread: its value cannot reach the origin
      }
    }
    if (p.all.find(';') != std::string_view::npos) {
      found = query_violation(*name, "encoding");
      return false;
    }
    const auto value = form_decode(p.value, value_buf);
    if (!value) {
      found = query_violation(*name, "encoding");
      return false;
    }
    if (param && param->pattern && !re2::RE2::FullMatch(*value, *param->pattern)) {
      found = query_violation(*name, pattern_constraint(param->pattern->pattern()));
      return false;
    }
    return true;
  });
  if (found) return found;

  for (const std::string& required : checks.required) {
    bool present = false;
    for_each_piece(raw_query, [&](const piece& p) {
      const auto name = form_decode(p.name, name_buf);
      present = name && *name == required;
      return !present;
    });
    if (!present) return query_violation(required, "required");
  }

  if (strip) {
    rewritten.emplace();
    for_each_piece(raw_query, [&](const piece& p) {
      const auto name = form_decode(p.name, name_buf);
      if (name && find_param(checks, *name)) {
        if (!rewritten->empty()) rewritten->push_back('&');
        rewritten->append(p.all);
      }
      return true;
    });
  }
  return std::nullopt;
}

}  // namespace airlock::filters::validation
