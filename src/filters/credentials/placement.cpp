#include "filters/credentials/placement.hpp"

#include "core/str_cat.hpp"
#include "filters/validation/text.hpp"
#include "policy/key_text.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace airlock::filters::credentials {
namespace http = boost::beast::http;

namespace {

bool has(std::string_view text, std::string_view p) {
  return text.find(p) != std::string_view::npos;
}

// A name the agent sent, as the refusal may show it: short printable text that holds no
// secret's placeholder or value (the refusal never repeats either), else `otherwise`.
std::string shown(std::string_view name, std::span<const policy::compiled_secret> secrets,
                  std::string_view otherwise) {
  constexpr std::size_t longest = 64;
  const bool printable =
      std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  bool clean = !name.empty() && name.size() <= longest && printable;
  for (std::size_t i = 0; clean && i < secrets.size(); ++i) {
    const auto& s = secrets[i];
    clean = (s.placeholder.empty() || !has(name, s.placeholder)) &&
            (s.value.empty() || !has(name, s.value.reveal()));
  }
  return std::string(clean ? name : otherwise);
}

std::optional<std::string> misplaced_in_query(std::span<const policy::compiled_secret> secrets,
                                              const policy::compiled_secret& s,
                                              std::string_view query) {
  const std::string_view p = s.placeholder;
  if (!has(query, p)) return std::nullopt;
  // The query with the swapped values left out: the placeholder must not remain in it (also
  // not across '&', which no single parameter would show).
  std::string rest;
  std::optional<std::string> first;
  std::string buf;
  bool sep = false;
  for_each_param(query, [&](std::string_view name, std::string_view value, bool has_value) {
    const bool slot = param_slot(s, name, value, has_value);
    if (sep) rest += '&';
    sep = true;
    rest += name;
    if (has_value) {
      rest += '=';
      if (!slot) rest += value;
    }
    if (!slot && !first && (has(name, p) || has(value, p)))
      first = core::str_cat("query parameter ",
                            shown(param_name(name, buf), secrets, "(a name not shown)"));
  });
  if (!has(rest, p)) return std::nullopt;
  return first ? std::move(*first) : std::string("the query");
}

// Where `s`'s placeholder is, that its swap_in does not swap (nullopt: nowhere).
std::optional<std::string> misplaced(std::span<const policy::compiled_secret> secrets,
                                     const policy::compiled_secret& s, const http::fields& head,
                                     std::string_view authority, std::string_view path_and_query,
                                     std::string_view method) {
  const std::string_view p = s.placeholder;
  const auto& at = s.swap_in;
  if (p.empty() || at.anywhere) return std::nullopt;
  if (has(method, p)) return "the method";
  if (has(authority, p)) return "the host";
  for (const auto& f : head) {
    const std::string_view name = f.name_string();
    if (has(name, p)) return "a header name";
    if (f.name() == http::field::proxy_authorization) continue;
    const std::string_view value = f.value();
    if (has(value, p) && !(at.header_allowed(name) && credential_value(value, p)))
      return core::str_cat("header ", shown(name, secrets, "(a name not shown)"));
  }
  const std::size_t q = path_and_query.find('?');
  if (has(path_and_query.substr(0, q), p) && !at.path) return "the path";
  if (q == std::string_view::npos) return std::nullopt;
  return misplaced_in_query(secrets, s, path_and_query.substr(q + 1));
}

}  // namespace

bool credential_value(std::string_view value, std::string_view placeholder) noexcept {
  if (value == placeholder) return true;
  if (placeholder.empty() || !value.ends_with(placeholder)) return false;
  std::string_view scheme = value.substr(0, value.size() - placeholder.size());
  const std::size_t spaces = scheme.size() - (scheme.find_last_not_of(' ') + 1);
  if (spaces == 0) return false;
  scheme.remove_suffix(spaces);
  return policy::is_token(scheme);
}

bool credential_param(std::string_view raw_value, std::string_view placeholder) {
  if (raw_value == placeholder) return true;
  std::string buf;
  const auto decoded = validation::form_decode(raw_value, buf);
  return decoded && *decoded == placeholder;
}

std::string_view param_name(std::string_view raw_name, std::string& buf) {
  const auto decoded = validation::form_decode(raw_name, buf);
  return decoded ? *decoded : raw_name;
}

bool param_slot(const policy::compiled_secret& s, std::string_view raw_name,
                std::string_view raw_value, bool has_value) {
  const std::string_view p = s.placeholder;
  if (!has_value || p.empty() || has(raw_name, p) || !credential_param(raw_value, p)) return false;
  std::string buf;
  return s.swap_in.param_allowed(param_name(raw_name, buf));
}

std::optional<misplacement> find_misplaced(std::span<const policy::compiled_secret> secrets,
                                           std::span<const std::size_t> which,
                                           const http::fields& head, std::string_view authority,
                                           std::string_view path_and_query,
                                           std::string_view method) {
  for (std::size_t i : which) {
    if (auto where = misplaced(secrets, secrets[i], head, authority, path_and_query, method))
      return misplacement{i, std::move(*where)};
  }
  return std::nullopt;
}

}  // namespace airlock::filters::credentials
