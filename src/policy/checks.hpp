#pragma once
// A rule's request checks (query, headers, JSON body) compiled once per policy load: names
// normalised, re2 patterns built. Immutable and shared by every request under one snapshot;
// src/filters/validation applies them to requests.

#include "policy/model.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace airlock::policy {

// Deepest JSON nesting a checked body may have (arrays and objects); deeper bodies are refused,
// so a field path has fewer segments than this.
inline constexpr std::size_t max_json_depth = 64;

struct compiled_query_param {
  std::string name;                         // decoded parameter name
  std::shared_ptr<const re2::RE2> pattern;  // null = any value
};

struct compiled_query {
  bool active = false;                       // the rule has a `query` key
  std::vector<compiled_query_param> params;  // sorted by name
  std::vector<std::string> required;
  model::unknown_params unknown = model::unknown_params::refuse;
};

struct compiled_header_pattern {
  std::string name;  // lower case
  std::shared_ptr<const re2::RE2> pattern;
};

struct compiled_headers {
  std::vector<std::string> required;   // lower case
  std::vector<std::string> forbidden;  // lower case
  std::vector<compiled_header_pattern> patterns;
  bool any() const noexcept { return !required.empty() || !forbidden.empty() || !patterns.empty(); }
};

// One `enum` entry, parsed once (at load) for every JSON kind it can equal, so requests only
// compare. The compiler makes sure each entry can be of the field's type.
struct compiled_enum_value {
  std::string text;                     // as written: equals a JSON string of exactly these bytes
  std::optional<std::int64_t> int64;    // text is a JSON integer literal within int64
  std::optional<std::uint64_t> uint64;  // text is a JSON integer literal within uint64
  std::optional<double> number;         // text is a finite JSON number literal
  std::optional<bool> boolean;          // text is `true` or `false`
};

struct compiled_json_field {
  std::string name;               // the dotted path as written, for messages
  std::vector<std::string> path;  // its segments
  model::json_type type = model::json_type::any;
  std::shared_ptr<const re2::RE2> pattern;       // null = none
  std::vector<compiled_enum_value> enum_values;  // empty = any value
  std::optional<std::uint64_t> max_length;
  std::optional<double> minimum;
  std::optional<double> maximum;
  bool required = false;
};

struct compiled_body {
  std::optional<std::uint64_t> max_bytes;
  bool json = false;  // `json:` with or without fields: the body must parse as JSON
  std::vector<compiled_json_field> fields;
};

// "string", "integer", ...: the policy's spelling of a JSON type, for messages.
std::string_view json_type_name(model::json_type t);

struct compiled_checks {
  compiled_query query;
  compiled_headers headers;
  compiled_body body;
  // Whether the proxy must see the request to apply these (and so needs plain HTTP or inspect).
  bool any() const noexcept {
    return query.active || headers.any() || body.max_bytes.has_value() || body.json;
  }
  // Whether the body must be held (up to its limit) before the request may be forwarded.
  bool needs_body() const noexcept { return body.json; }
};

}  // namespace airlock::policy
