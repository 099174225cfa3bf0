#include "filters/credentials/placeholders.hpp"

#include "core/str_cat.hpp"
#include "filters/credentials/placement.hpp"
#include "filters/credentials/query_params.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <utility>

namespace airlock::filters::credentials {
namespace http = boost::beast::http;

namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
}

bool searched(const http::fields::value_type& f) {
  return f.name() != http::field::proxy_authorization;
}

// The places of the target that `s`'s swap_in names (placement.hpp): with `anywhere` every
// occurrence; else the path's with `path`, and the values of the parameters that are the
// placeholder whole (percent-encoded, as inject.query sends a value).
void swap_in_target(const policy::compiled_secret& s, std::string& target) {
  const std::string_view p = s.placeholder;
  if (target.find(p) == std::string::npos) return;
  const std::string_view value = s.value.reveal();
  if (s.swap_in.anywhere) {
    replace_all(target, p, value);
    return;
  }
  const std::size_t q = target.find('?');
  std::string path = target.substr(0, q);
  if (s.swap_in.path) replace_all(path, p, value);
  if (q == std::string::npos) {
    target = std::move(path);
    return;
  }
  std::string query;
  bool sep = false;
  for_each_param(std::string_view(target).substr(q + 1),
                 [&](std::string_view name, std::string_view raw, bool has_value) {
                   if (sep) query += '&';
                   sep = true;
                   query += name;
                   if (!has_value) return;
                   query += '=';
                   if (param_slot(s, name, raw, has_value))
                     query += percent_encode(value);
                   else
                     query += raw;
                 });
  target = core::str_cat(path, "?", query);
}

// A field's value, where `s`'s swap_in names it: with `anywhere` every occurrence; else a
// credential form (the placeholder alone, or after an auth scheme) of an allowed header.
bool swap_in_field(const policy::compiled_secret& s, std::string_view name, std::string& text) {
  const std::string_view p = s.placeholder;
  if (text.find(p) == std::string::npos) return false;
  if (s.swap_in.anywhere) {
    replace_all(text, p, s.value.reveal());
    return true;
  }
  if (!s.swap_in.header_allowed(name) || !credential_value(text, p)) return false;
  text.replace(text.size() - p.size(), p.size(), s.value.reveal());
  return true;
}

}  // namespace

bool any_placeholder(std::span<const policy::compiled_secret> secrets) noexcept {
  return std::any_of(secrets.begin(), secrets.end(),
                     [](const auto& s) { return !s.placeholder.empty(); });
}

std::vector<std::size_t> find_placeholders(std::span<const policy::compiled_secret> secrets,
                                           const http::fields& head, std::string_view target,
                                           std::string_view method) {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    const std::string_view p = secrets[i].placeholder;
    if (p.empty()) continue;
    bool hit = target.find(p) != std::string_view::npos || method.find(p) != std::string_view::npos;
    // Names too: a field name is the agent's text, forwarded as it is.
    for (auto f = head.begin(); !hit && f != head.end(); ++f)
      hit = f->name_string().find(p) != std::string_view::npos ||
            (searched(*f) && f->value().find(p) != std::string_view::npos);
    if (hit) found.push_back(i);
  }
  return found;
}

void swap_placeholders(std::span<const policy::compiled_secret> secrets,
                       std::span<const std::size_t> which, http::fields& head,
                       std::string& target) {
  if (which.empty()) return;
  for (std::size_t i : which)
    swap_in_target(secrets[i], target);
  // Fields cannot be edited in place: the changed ones are removed and added back.
  std::vector<std::pair<std::string, std::string>> changed;
  for (auto f = head.begin(); f != head.end();) {
    std::string value(f->value());
    bool swapped = false;
    if (searched(*f)) {
      for (std::size_t i : which)
        swapped = swap_in_field(secrets[i], f->name_string(), value) || swapped;
    }
    if (swapped) {
      changed.emplace_back(std::string(f->name_string()), std::move(value));
      f = head.erase(f);
    } else {
      ++f;
    }
  }
  for (auto& [name, value] : changed)
    head.insert(name, value);
}

}  // namespace airlock::filters::credentials
