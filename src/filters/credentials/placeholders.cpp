#include "filters/credentials/placeholders.hpp"

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
  auto swap_in = [&](std::string& text) {
    bool changed = false;
    for (std::size_t i : which) {
      const auto& s = secrets[i];
      if (text.find(s.placeholder) == std::string::npos) continue;
      replace_all(text, s.placeholder, s.value.reveal());
      changed = true;
    }
    return changed;
  };
  swap_in(target);
  // Fields cannot be edited in place: the changed ones are removed and added back.
  std::vector<std::pair<std::string, std::string>> changed;
  for (auto f = head.begin(); f != head.end();) {
    std::string value(f->value());
    if (searched(*f) && swap_in(value)) {
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
