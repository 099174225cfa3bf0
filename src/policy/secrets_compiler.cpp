#include "policy/secrets_compiler.hpp"

#include "core/str_cat.hpp"
#include "policy/host_pattern.hpp"
#include "policy/key_text.hpp"
#include "policy/redactor_names.hpp"
#include "policy/secret_reader.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <string_view>

namespace airlock::policy {
namespace {

bool is_lower_or_digit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool valid_secret_name(std::string_view s) {
  return !s.empty() && s.size() <= max_secret_name && std::all_of(s.begin(), s.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '-';
  });
}

bool valid_redactor_name(std::string_view s) {
  return !s.empty() && s.size() <= max_redactor_name && std::all_of(s.begin(), s.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '.' || c == '-';
  });
}

class context {
 public:
  context(const mark_table& marks, error_sink& errors) : marks_(marks), errors_(errors) {}
  void error(const std::string& key, std::string message) {
    errors_.add(marks_.find(key), key, std::move(message));
  }
  void warn(const std::string& key, std::string message) {
    errors_.warn(marks_.find(key), key, std::move(message));
  }
  bool skip(const std::string& key) const { return errors_.reported(key); }
  bool present(const std::string& key) const { return marks_.has(key); }
  bool broken(const std::string& key) const {
    return errors_.reported(key) || errors_.has_unknown_key(key);
  }

 private:
  const mark_table& marks_;
  error_sink& errors_;
};

// ---------------------------------------------------------------------------------- secrets

void read_value(context& c, const model::secret& s, const std::string& key, bool read_values,
                compiled_secret& out) {
  const bool has_env = c.present(key + ".env");
  const bool has_file = c.present(key + ".file");
  if (has_env && has_file) {
    c.error(key + ".file", "give env or file, not both");
    return;
  }
  if (!has_env && !has_file) {
    if (!c.broken(key)) c.error(key, "needs env (a variable name) or file (a path)");
    return;
  }
  const std::string k = key + (has_env ? ".env" : ".file");
  if (c.skip(k)) return;
  secret_read read;
  if (has_env) {
    out.source = secret_source::env;
    out.origin = s.env;
    if (!valid_env_name(s.env)) {
      // Not echoed: it may be the secret itself, pasted into the wrong place.
      c.error(k,
              "not a valid environment variable name (letters, digits and '_', not starting "
              "with a digit)");
      return;
    }
    if (!read_values) return;
    read = read_secret_env(s.env);
  } else {
    out.source = secret_source::file;
    out.origin = s.file;
    if (s.file.empty()) {
      c.error(k, "must not be empty");
      return;
    }
    if (!read_values) return;
    read = read_secret_file(s.file);
  }
  if (!read.ok()) {
    c.error(k, std::move(read.error));
    return;
  }
  if (!read.warning.empty()) c.warn(k, std::move(read.warning));
  out.value = std::move(read.value);
}

void compile_hosts(context& c, model::secret& s, const std::string& key, compiled_secret& out) {
  const std::string hk = key + ".hosts";
  if (!c.present(hk) || c.skip(hk)) return;
  if (s.hosts.empty()) {
    c.error(hk, "must not be empty (omit the key for a secret bound to no host)");
    return;
  }
  for (std::size_t i = 0; i < s.hosts.size(); ++i) {
    const std::string k = indexed(hk, i);
    if (c.skip(k)) continue;
    std::string message;
    auto pattern = parse_host_pattern(s.hosts[i], message);
    if (!pattern) {
      c.error(k, std::move(message));
      continue;
    }
    s.hosts[i] = pattern->text;
    if (std::find(out.hosts.begin(), out.hosts.end(), pattern->text) == out.hosts.end())
      out.hosts.push_back(std::move(pattern->text));
  }
}

void compile_placeholder(context& c, const model::secret& s, const std::string& key,
                         compiled_secret& out) {
  const std::string k = key + ".placeholder";
  if (!s.has_placeholder || c.skip(k)) return;
  // Nothing below quotes the placeholder: it may be the real value, written in by mistake.
  if (s.placeholder.empty()) {
    c.error(k, "must not be empty (omit the key for no placeholder)");
    return;
  }
  if (!c.present(key + ".hosts")) {
    c.error(k, "a placeholder needs hosts: the hosts where the proxy may swap it for the value");
    return;
  }
  // Without a value (not read: load_options::read_secrets; or unreadable: already an error)
  // only what does not depend on it is checked.
  std::string problem = out.value.empty() ? placeholder_text_problem(s.placeholder)
                                          : placeholder_problem(s.placeholder, out.value.reveal());
  if (!problem.empty()) {
    c.error(k, std::move(problem));
    return;
  }
  out.placeholder = s.placeholder;
}

// `swap_in`: where on its hosts the placeholder is swapped. Only a placeholder has places.
void compile_swap_in(context& c, const model::secret& s, const std::string& key,
                     compiled_secret& out) {
  const std::string k = key + ".swap_in";
  if (!s.has_swap_in || c.skip(k)) return;
  if (!s.has_placeholder) {
    c.error(k, "swap_in says where the placeholder is swapped: set secrets." + s.name +
                   ".placeholder, or omit swap_in");
    return;
  }
  if (s.swap_in.empty()) {
    c.error(k, "must not be empty (omit the key for [header, query])");
    return;
  }
  swap_places places;  // the defaults are not added to what is listed
  places.any_header = places.any_query = false;
  for (std::size_t i = 0; i < s.swap_in.size(); ++i) {
    const std::string ik = indexed(k, i);
    if (c.skip(ik)) continue;
    if (std::string problem = add_swap_place(s.swap_in[i], places); !problem.empty())
      c.error(ik, std::move(problem));
  }
  out.swap_in = std::move(places);
}

// Between secrets: a placeholder is handed to the agent, so it must not carry any secret's
// value, and it must say unambiguously which secret it stands for.
void cross_check(context& c, const std::vector<compiled_secret>& secrets) {
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    const compiled_secret& s = secrets[i];
    if (s.placeholder.empty()) continue;
    const std::string k = core::str_cat("secrets.", s.name, ".placeholder");
    bool reported = false;
    for (std::size_t j = 0; j < secrets.size() && !reported; ++j) {
      const compiled_secret& o = secrets[j];
      if (j == i || o.value.empty()) continue;
      if (s.placeholder.find(o.value.reveal()) != std::string::npos) {
        c.error(k, core::str_cat("holds the value of secret '", o.name,
                                 "': the agent would be given that secret"));
        reported = true;
      }
    }
    for (std::size_t j = 0; j < i && !reported; ++j) {
      if (secrets[j].placeholder == s.placeholder) {
        c.error(k, core::str_cat("same placeholder as secret '", secrets[j].name,
                                 "': each placeholder must stand for one secret"));
        reported = true;
      }
    }
  }
}

// ---------------------------------------------------------------------------------- redactors

// The options the redaction engine compiles patterns with (filters/redaction/engine.cpp): bodies
// are bytes, and RE2 must not log (to stderr) a pattern it rejects.
RE2::Options engine_re2_options() {
  RE2::Options o;
  o.set_encoding(RE2::Options::EncodingLatin1);
  o.set_log_errors(false);
  return o;
}

// Whether the pattern can match an empty string, in some context (`\b`, `^`, `x*`): such a
// match replaces nothing, and finding one at every position is all the redactor would do. Tried
// on the empty text and at every position of a few short texts (word and non-word characters,
// line breaks), anchored there; a pattern that is empty-capable only in other contexts is
// still harmless, as the engine skips empty matches.
bool can_match_empty(const RE2& re) {
  if (RE2::FullMatch("", re)) return true;
  static constexpr std::string_view probes[] = {"a",   "aa",   "a a", " ",   "\n",  "a\nb",
                                                "0",   "-",    "_",   "\"",  "a-b", "\xc3\xa9",
                                                "a.b", "a\tb", "A1",  "\r\n"};
  re2::StringPiece match;
  for (std::string_view p : probes) {
    const re2::StringPiece text(p.data(), p.size());
    for (std::size_t pos = 0; pos <= p.size(); ++pos) {
      if (re.Match(text, pos, p.size(), RE2::ANCHOR_START, &match, 1) && match.empty()) return true;
    }
  }
  return false;
}

void compile_redactor(context& c, const model::redactor& r, std::size_t index,
                      const std::vector<compiled_redactor>& before,
                      const std::vector<model::redactor>& all, compiled_redactor& out) {
  const std::string key = indexed("redactors", index);
  const bool broken = c.broken(key);
  out.name = r.name;

  const std::string nk = key + ".name";
  if (!c.skip(nk)) {
    if (!c.present(nk)) {
      if (!broken) c.error(key, "missing required key 'name'");
    } else if (!valid_redactor_name(r.name)) {
      c.error(nk, core::str_cat("invalid redactor name '", r.name,
                                "' (letters, digits, _ . -, at most ", max_redactor_name, ")"));
    } else if (is_builtin_redactor(r.name)) {
      c.error(nk, core::str_cat("'", r.name,
                                "' is a built-in redactor: give yours another name (a rule can "
                                "list both)"));
    } else {
      for (std::size_t j = 0; j < before.size(); ++j) {
        if (before[j].name == r.name) {
          c.error(nk, core::str_cat("duplicate redactor name '", r.name, "' (first at line ",
                                    all[j].at.line, ")"));
          break;
        }
      }
    }
  }

  const std::string pk = key + ".pattern";
  if (!c.skip(pk)) {
    if (!c.present(pk)) {
      if (!broken) c.error(key, "missing required key 'pattern'");
    } else if (r.pattern.empty()) {
      c.error(pk, "must not be empty");
    } else {
      RE2 re(r.pattern, engine_re2_options());
      if (!re.ok()) {
        c.error(pk, core::str_cat("invalid regular expression: ", re.error()));
      } else if (can_match_empty(re)) {
        c.error(pk, "the pattern matches an empty string, which redacts nothing");
      } else {
        // The engine replaces group 1 of a pattern that has groups: a plain (…) for grouping
        // would leave the rest of the match in the response. So the only group allowed is the
        // one that says so.
        const int groups = re.NumberOfCapturingGroups();
        const auto& named = re.NamedCapturingGroups();
        const bool partial = groups == 1 && named.size() == 1 && named.begin()->first == "redact";
        if (groups > 0 && !partial) {
          c.error(pk,
                  "capturing groups are not allowed: group with (?:...), or mark the part to "
                  "replace with (?P<redact>...)");
        } else {
          out.pattern = r.pattern;
          out.partial = partial;
        }
      }
    }
  }

  const std::string rk = key + ".replace";
  out.replacement = core::str_cat("[REDACTED:", r.name, "]");
  if (r.has_replace && !c.skip(rk)) {
    const bool printable = std::all_of(r.replace.begin(), r.replace.end(),
                                       [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
    if (r.replace.empty()) {
      c.error(rk, "must not be empty (omit it for [REDACTED:<name>])");
    } else if (r.replace.size() > max_replacement) {
      c.error(rk, core::str_cat("longer than ", max_replacement, " bytes"));
    } else if (!printable) {
      // It also replaces text in response headers: no line break may get in (RFC 9110 5.5).
      c.error(rk, "must be printable ASCII (no control characters or line breaks)");
    } else {
      out.replacement = r.replace;
    }
  }
}

}  // namespace

std::size_t secret_prefix_length(std::string_view value) noexcept {
  std::size_t prefix = 0;
  while (true) {
    std::size_t j = prefix;
    while (j < value.size() && j - prefix <= 6 && is_lower_or_digit(value[j]))
      ++j;
    const std::size_t word = j - prefix;
    if (word < 1 || word > 6 || j >= value.size() || (value[j] != '_' && value[j] != '-')) break;
    if ((j + 1) * 2 > value.size()) break;  // at most half of the value
    prefix = j + 1;
  }
  return prefix;
}

std::string placeholder_text_problem(std::string_view placeholder) {
  for (char ch : placeholder) {
    if (ch < 0x21 || ch > 0x7e)
      return "must be printable ASCII without spaces (it goes into environment variables and "
             "headers)";
  }
  return {};
}

std::string placeholder_problem(std::string_view placeholder, std::string_view value) {
  if (std::string problem = placeholder_text_problem(placeholder); !problem.empty()) return problem;
  if (placeholder.size() != value.size())
    return core::str_cat("is ", placeholder.size(), " characters long, the value ", value.size(),
                         ": a placeholder has the value's length");
  if (placeholder == value) return "is the value itself: a placeholder must be a fake";
  const std::size_t prefix = secret_prefix_length(value);
  if (placeholder.substr(0, prefix) != value.substr(0, prefix))
    return core::str_cat("must start with the value's prefix (its first ", prefix,
                         " characters, e.g. ghp_ or sk-)");
  std::size_t same = 0;
  for (std::size_t i = prefix; i < value.size(); ++i)
    same += placeholder[i] == value[i] ? 1 : 0;
  const std::size_t allowed = std::max<std::size_t>(6, (value.size() - prefix) / 4);
  if (same > allowed)
    return core::str_cat("has ", same,
                         " characters equal to the value's at the same position past its prefix "
                         "(at most ",
                         allowed, "): it would give the value away");
  return {};
}

std::vector<compiled_secret> compile_secrets(model::policy& policy, const mark_table& marks,
                                             error_sink& errors, bool read_values) {
  context c(marks, errors);
  std::vector<compiled_secret> out(policy.secrets.size());
  for (std::size_t i = 0; i < policy.secrets.size(); ++i) {
    model::secret& s = policy.secrets[i];
    compiled_secret& cs = out[i];
    const std::string key = core::str_cat("secrets.", s.name);
    cs.name = s.name;
    if (c.skip(key)) continue;  // not a mapping: said already
    if (!valid_secret_name(s.name))
      c.error(key, core::str_cat("invalid secret name '", s.name,
                                 "' (letters, digits, _ and -, at most ", max_secret_name, ")"));
    read_value(c, s, key, read_values, cs);
    compile_hosts(c, s, key, cs);
    compile_placeholder(c, s, key, cs);
    compile_swap_in(c, s, key, cs);
  }
  cross_check(c, out);
  return out;
}

std::vector<compiled_redactor> compile_redactors(const model::policy& policy,
                                                 const mark_table& marks, error_sink& errors) {
  context c(marks, errors);
  std::vector<compiled_redactor> out;
  out.reserve(policy.redactors.size());
  for (std::size_t i = 0; i < policy.redactors.size(); ++i) {
    compiled_redactor r;
    compile_redactor(c, policy.redactors[i], i, out, policy.redactors, r);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace airlock::policy
