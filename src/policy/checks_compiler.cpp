#include "policy/checks_compiler.hpp"

#include "core/str_cat.hpp"
#include "core/utf8.hpp"
#include "policy/key_text.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>

namespace airlock::policy {
namespace {

using model::json_type;

std::shared_ptr<const re2::RE2> regex(const std::string& pattern, const std::string& key,
                                      const check_error& error) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error goes into the load error, not to stderr
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) {
    error(key, core::str_cat("invalid regular expression: ", re->error()));
    return nullptr;
  }
  return re;
}

// A JSON number literal (RFC 8259 section 6): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number_literal(std::string_view s, bool& integral) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0')
    ++i;
  else if (!digits())
    return false;
  integral = true;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
    integral = false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
    integral = false;
  }
  return i == s.size();
}

compiled_enum_value parse_enum_value(const std::string& text) {
  compiled_enum_value v;
  v.text = text;
  if (text == "true") v.boolean = true;
  if (text == "false") v.boolean = false;
  bool integral = false;
  if (json_number_literal(text, integral)) {
    const char* first = text.data();
    const char* last = text.data() + text.size();
    double d = 0;
    auto [dend, dec] = std::from_chars(first, last, d);
    if (dec == std::errc{} && dend == last && std::isfinite(d)) v.number = d;
    if (integral) {
      std::int64_t i = 0;
      auto [iend, iec] = std::from_chars(first, last, i);
      if (iec == std::errc{} && iend == last) v.int64 = i;
      std::uint64_t u = 0;
      auto [uend, uec] = std::from_chars(first, last, u);
      if (uec == std::errc{} && uend == last) v.uint64 = u;
    }
  }
  return v;
}

void compile_query(const model::query_checks& in, const check_error& error, compiled_query& out) {
  out.active = in.present || !in.params.empty() || !in.required.empty();
  out.unknown = in.unknown;
  for (const auto& [name, pattern] : in.params) {
    const std::string key = core::str_cat("query.params.", name);
    if (name.empty()) {
      error(key, "parameter names must not be empty");
      continue;
    }
    if (name.find('\0') != std::string::npos || !core::valid_utf8(name)) {
      error(key, "parameter names must be UTF-8 without NUL (they are compared after decoding)");
      continue;
    }
    if (std::any_of(out.params.begin(), out.params.end(),
                    [&n = name](const auto& p) { return p.name == n; })) {
      error(key, core::str_cat("parameter '", name, "' is listed twice"));
      continue;
    }
    compiled_query_param p;
    p.name = name;
    if (!pattern.empty()) {
      p.pattern = regex(pattern, key, error);
      if (!p.pattern) continue;
    }
    out.params.push_back(std::move(p));
  }
  std::sort(out.params.begin(), out.params.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });

  for (std::size_t i = 0; i < in.required.size(); ++i) {
    const std::string& name = in.required[i];
    const std::string key = indexed("query.required", i);
    if (name.empty()) {
      error(key, "parameter names must not be empty");
      continue;
    }
    if (std::find(out.required.begin(), out.required.end(), name) != out.required.end()) {
      error(key, core::str_cat("parameter '", name, "' is listed twice"));
      continue;
    }
    const bool listed = std::any_of(in.params.begin(), in.params.end(),
                                    [&](const auto& p) { return p.first == name; });
    if (!listed && in.unknown != model::unknown_params::allow) {
      error(key, core::str_cat("required parameter '", name, "' is not in query.params, so ",
                               in.unknown == model::unknown_params::refuse
                                   ? "unknown: refuse would refuse every request that has it"
                                   : "unknown: strip would remove it",
                               " (add it to query.params, '' allows any value)"));
      continue;
    }
    out.required.push_back(name);
  }
}

void compile_headers(const model::header_checks& in, const check_error& error,
                     compiled_headers& out) {
  auto names = [&](const std::vector<std::string>& list, std::string_view what,
                   std::vector<std::string>& dest) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string key = indexed(core::str_cat("headers.", what), i);
      if (!is_token(list[i])) {
        error(key, core::str_cat("'", list[i], "' is not a valid header name (RFC 9110 token)"));
        continue;
      }
      std::string name = lower(list[i]);
      if (std::find(dest.begin(), dest.end(), name) != dest.end()) {
        error(key, core::str_cat("header '", list[i], "' is listed twice"));
        continue;
      }
      if (&dest == &out.forbidden &&
          std::find(out.required.begin(), out.required.end(), name) != out.required.end()) {
        error(key, core::str_cat("header '", list[i], "' is both required and forbidden"));
        continue;
      }
      dest.push_back(std::move(name));
    }
  };
  names(in.required, "required", out.required);
  names(in.forbidden, "forbidden", out.forbidden);

  for (const auto& [name, pattern] : in.patterns) {
    const std::string key = core::str_cat("headers.match.", name);
    if (!is_token(name)) {
      error(key, core::str_cat("'", name, "' is not a valid header name (RFC 9110 token)"));
      continue;
    }
    std::string lname = lower(name);
    if (std::any_of(out.patterns.begin(), out.patterns.end(),
                    [&](const auto& p) { return p.name == lname; })) {
      error(key, core::str_cat("header '", name, "' is listed twice"));
      continue;
    }
    if (std::find(out.forbidden.begin(), out.forbidden.end(), lname) != out.forbidden.end()) {
      error(key, core::str_cat("header '", name, "' is forbidden, so its pattern never applies"));
      continue;
    }
    compiled_header_pattern p;
    p.name = std::move(lname);
    p.pattern = regex(pattern, key, error);
    if (p.pattern) out.patterns.push_back(std::move(p));
  }
}

// Split "a.b.c"; false (and no segments) when any segment would be empty.
bool split_path(const std::string& path, std::vector<std::string>& out) {
  out.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::size_t end = dot == std::string::npos ? path.size() : dot;
    if (end == start) {
      out.clear();
      return false;
    }
    out.emplace_back(path, start, end - start);
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// Whether some value can satisfy all of this field's constraints and still be an object (so
// that another field can be nested under it).
bool can_be_object(const model::json_field& f) {
  if (f.type == json_type::object) return true;
  return f.type == json_type::any && f.pattern.empty() && f.enum_values.empty() && !f.max_length &&
         !f.minimum && !f.maximum;
}

void compile_field(const model::json_field& f, const std::string& key, const check_error& error,
                   compiled_json_field& out) {
  const json_type t = f.type;
  const auto tn = json_type_name(t);
  out.name = f.path;
  out.type = t;
  out.required = f.required;
  out.max_length = f.max_length;
  out.minimum = f.minimum;
  out.maximum = f.maximum;

  // With no declared type the constraints imply one: a pattern a string, bounds a number. Each
  // is enforced on its own at request time, so two that imply different kinds are a mistake.
  json_type implied = t;
  if (!f.pattern.empty()) {
    if (t != json_type::any && t != json_type::string) {
      error(key + ".pattern", core::str_cat("pattern applies to strings, not to type ", tn));
    } else {
      implied = json_type::string;
      out.pattern = regex(f.pattern, key + ".pattern", error);
    }
  }
  for (const auto& [bound, name] : {std::pair{&f.minimum, "minimum"}, {&f.maximum, "maximum"}}) {
    if (!*bound) continue;
    const std::string bkey = core::str_cat(key, '.', name);
    if (!std::isfinite(**bound)) {
      error(bkey, core::str_cat(name, " must be a finite number"));
    } else if (t != json_type::any && t != json_type::number && t != json_type::integer) {
      error(bkey, core::str_cat(name, " applies to numbers, not to type ", tn));
    } else if (implied == json_type::string) {
      error(bkey, core::str_cat(name,
                                " applies to numbers but the pattern to strings: no value "
                                "can satisfy both (set one, or give a type)"));
    } else if (t == json_type::any) {
      implied = json_type::number;
    }
  }
  if (f.minimum && f.maximum && std::isfinite(*f.minimum) && std::isfinite(*f.maximum) &&
      *f.minimum > *f.maximum)
    error(key + ".minimum",
          core::str_cat("minimum ", *f.minimum, " is greater than maximum ", *f.maximum));
  if (f.max_length) {
    if (t != json_type::any && t != json_type::string && t != json_type::array)
      error(key + ".max_length",
            core::str_cat("max_length applies to strings and arrays, not to type ", tn));
    else if (implied == json_type::number)
      error(key + ".max_length",
            "max_length applies to strings and arrays but minimum/maximum to numbers: no value "
            "can satisfy both");
  }
  if (!f.enum_values.empty()) {
    if (t == json_type::object || t == json_type::array || t == json_type::null) {
      error(key + ".enum",
            core::str_cat("enum applies to strings, numbers and booleans, not to type ", tn));
      return;
    }
    for (std::size_t i = 0; i < f.enum_values.size(); ++i) {
      compiled_enum_value v = parse_enum_value(f.enum_values[i]);
      const std::string ekey = indexed(key + ".enum", i);
      const std::string& text = f.enum_values[i];
      if (implied == json_type::integer && !v.int64 && !v.uint64)
        error(ekey, core::str_cat("'", text,
                                  "' is not an integer (JSON literal without fraction "
                                  "or exponent, within 64 bits)"));
      else if (implied == json_type::number && !v.number)
        error(ekey, core::str_cat("'", text, "' is not a number (JSON number literal)"));
      else if (implied == json_type::boolean && !v.boolean)
        error(ekey, core::str_cat("'", text, "' is not true or false"));
      else
        out.enum_values.push_back(std::move(v));
    }
  }
}

void compile_body(const model::body_checks& in, const check_error& error, compiled_body& out) {
  out.max_bytes = in.max_bytes;
  out.json = in.json || !in.fields.empty();
  out.fields = compile_json_fields(in.fields, "body.json.", error);
}

}  // namespace

std::string_view json_type_name(model::json_type t) {
  switch (t) {
    case model::json_type::any:
      return "any";
    case model::json_type::string:
      return "string";
    case model::json_type::number:
      return "number";
    case model::json_type::integer:
      return "integer";
    case model::json_type::boolean:
      return "boolean";
    case model::json_type::object:
      return "object";
    case model::json_type::array:
      return "array";
    case model::json_type::null:
      return "null";
  }
  return "any";
}

std::vector<compiled_json_field> compile_json_fields(const std::vector<model::json_field>& fields,
                                                     std::string_view prefix,
                                                     const check_error& error) {
  std::vector<compiled_json_field> out;
  const auto& in = fields;
  std::vector<std::vector<std::string>> paths(in.size());
  std::vector<bool> usable(in.size(), false);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const model::json_field& f = in[i];
    const std::string key = core::str_cat(prefix, f.path);
    if (!split_path(f.path, paths[i])) {
      error(key, core::str_cat("malformed field path '", f.path,
                               "' (names separated by single dots, e.g. user.name)"));
      continue;
    }
    if (paths[i].size() >= max_json_depth) {
      error(key, core::str_cat("field path '", f.path, "' is nested deeper than bodies may be (",
                               max_json_depth - 1, " levels)"));
      continue;
    }
    bool duplicate = false;
    for (std::size_t j = 0; j < i && !duplicate; ++j)
      duplicate = usable[j] && paths[j] == paths[i];
    if (duplicate) {
      error(key, core::str_cat("field '", f.path, "' is listed twice"));
      continue;
    }
    usable[i] = true;
  }
  // A field under another one needs that one to be an object; order in the file is free.
  for (std::size_t i = 0; i < in.size(); ++i) {
    for (std::size_t j = 0; j < in.size() && usable[i]; ++j) {
      if (i == j || !usable[j] || paths[j].size() >= paths[i].size()) continue;
      if (!std::equal(paths[j].begin(), paths[j].end(), paths[i].begin())) continue;
      if (can_be_object(in[j])) continue;
      error(core::str_cat(prefix, in[i].path),
            core::str_cat("field '", in[j].path,
                          "' cannot be an object (its type or constraints say otherwise), so '",
                          in[i].path, "' can never be present"));
      usable[i] = false;
    }
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!usable[i]) continue;
    compiled_json_field c;
    compile_field(in[i], core::str_cat(prefix, in[i].path), error, c);
    c.path = std::move(paths[i]);
    out.push_back(std::move(c));
  }
  return out;
}

compiled_checks compile_checks(const model::rule& rule, const check_error& error) {
  compiled_checks out;
  compile_query(rule.query, error, out.query);
  compile_headers(rule.headers, error, out.headers);
  compile_body(rule.body, error, out.body);
  return out;
}

}  // namespace airlock::policy
