#include "filters/validation/json_body.hpp"

#include "core/str_cat.hpp"
#include "filters/validation/text.hpp"

#include <re2/re2.h>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_stack.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::validation {
namespace {

namespace json = boost::json;
using policy::model::json_type;

// Builds the document like boost::json::parser does (through a value_stack), and also refuses
// what that parser silently accepts: an object with a key twice (it keeps the last one) and
// keys holding U+0000.
class strict_handler {
 public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  enum class failure { none, duplicate_key, nul_in_key };

  strict_handler(json::storage_ptr sp, unsigned char* temp, std::size_t temp_size)
      : st_(sp, temp, temp_size) {
    st_.reset(std::move(sp));
  }

  failure why() const noexcept { return why_; }
  const std::string& key() const noexcept { return bad_key_; }
  json::value release() { return st_.release(); }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    frames_.push_back({keys_.size(), arena_.size()});
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code& ec) {
    // Sort this object's keys by hash (bytes only on equal hashes) and look at neighbours:
    // O(n log n) however many keys the object has.
    const frame f = frames_.back();
    const auto first = keys_.begin() + static_cast<std::ptrdiff_t>(f.first_key);
    const auto less = [&](const key_ref& a, const key_ref& b) {
      return a.hash != b.hash ? a.hash < b.hash : text(a) < text(b);
    };
    std::sort(first, keys_.end(), less);
    const auto dup = std::adjacent_find(first, keys_.end(), [&](const auto& a, const auto& b) {
      return a.hash == b.hash && text(a) == text(b);
    });
    if (dup != keys_.end()) return fail(failure::duplicate_key, text(*dup), ec);
    keys_.resize(f.first_key);
    arena_.resize(f.arena_size);
    frames_.pop_back();
    st_.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    st_.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    if (!in_key_) key_start_ = arena_.size();
    in_key_ = true;
    arena_.append(s.data(), s.size());
    st_.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    if (!in_key_) key_start_ = arena_.size();
    in_key_ = false;
    arena_.append(s.data(), s.size());
    const std::string_view key = std::string_view(arena_).substr(key_start_);
    if (key.find('\0') != std::string_view::npos) return fail(failure::nul_in_key, key, ec);
    st_.push_key(s);
    keys_.push_back({std::hash<std::string_view>{}(key), key_start_, key.size()});
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st_.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st_.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    st_.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    st_.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view, json::error_code&) {
    st_.push_double(d);
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st_.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st_.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  struct key_ref {
    std::size_t hash;
    std::size_t offset;  // into arena_
    std::size_t size;
  };
  struct frame {
    std::size_t first_key;   // this object's keys start here in keys_
    std::size_t arena_size;  // and their bytes here in arena_
  };

  std::string_view text(const key_ref& k) const {
    return std::string_view(arena_).substr(k.offset, k.size);
  }
  bool fail(failure why, std::string_view key, json::error_code& ec) {
    why_ = why;
    bad_key_ = key;
    ec = json::error::syntax;  // any error stops the parser; why_ says what it was
    return false;
  }

  json::value_stack st_;
  // The keys of every object still open, innermost last; their bytes (unescaped) in arena_.
  std::vector<key_ref> keys_;
  std::string arena_;
  std::vector<frame> frames_;
  std::size_t key_start_ = 0;  // where the key arriving in parts starts in arena_
  bool in_key_ = false;
  failure why_ = failure::none;
  std::string bad_key_;
};

bool is_number(const json::value& v) {
  return v.is_int64() || v.is_uint64() || (v.is_double() && std::isfinite(v.get_double()));
}

// Sign of (a - b) for a JSON number `a` and a finite bound `b`, exact for 64-bit integers
// (converting them to double would round 2^53 + 1 down and let it past a bound of 2^53).
int compare(const json::value& a, double b) {
  if (a.is_double()) {
    const double d = a.get_double();
    return d < b ? -1 : (d > b ? 1 : 0);
  }
  constexpr double two63 = 9223372036854775808.0;
  if (a.is_int64()) {
    const std::int64_t i = a.get_int64();
    if (b >= two63) return -1;
    if (b < -two63) return 1;
    const auto t = static_cast<std::int64_t>(b);  // exact: |b| < 2^63, truncated toward 0
    if (i != t) return i < t ? -1 : 1;
    const double rest = b - static_cast<double>(t);  // exact: t came from b
    return rest > 0 ? -1 : (rest < 0 ? 1 : 0);
  }
  const std::uint64_t u = a.get_uint64();
  if (b >= 2 * two63) return -1;
  if (b < 0) return 1;
  const auto t = static_cast<std::uint64_t>(b);
  if (u != t) return u < t ? -1 : 1;
  const double rest = b - static_cast<double>(t);
  return rest > 0 ? -1 : (rest < 0 ? 1 : 0);
}

bool enum_match(const json::value& v, const std::vector<policy::compiled_enum_value>& set) {
  for (const auto& e : set) {
    switch (v.kind()) {
      case json::kind::string:
        if (std::string_view(v.get_string()) == e.text) return true;
        break;
      case json::kind::bool_:
        if (e.boolean && *e.boolean == v.get_bool()) return true;
        break;
      case json::kind::int64:
        if (e.int64 || e.uint64) {
          if (e.int64 && *e.int64 == v.get_int64()) return true;
        } else if (e.number && compare(v, *e.number) == 0) {
          return true;
        }
        break;
      case json::kind::uint64:
        if (e.int64 || e.uint64) {
          if (e.uint64 && *e.uint64 == v.get_uint64()) return true;
        } else if (e.number && compare(v, *e.number) == 0) {
          return true;
        }
        break;
      case json::kind::double_:
        if (e.number && *e.number == v.get_double()) return true;
        break;
      default:
        break;
    }
  }
  return false;
}

bool has_type(const json::value& v, json_type t) {
  switch (t) {
    case json_type::any:
      return true;
    case json_type::string:
      return v.is_string();
    case json_type::number:
      return is_number(v);
    case json_type::integer:
      return v.is_int64() || v.is_uint64();
    case json_type::boolean:
      return v.is_bool();
    case json_type::object:
      return v.is_object();
    case json_type::array:
      return v.is_array();
    case json_type::null:
      return v.is_null();
  }
  return false;
}

// The first `n` segments of the field's dotted name ("user" of "user.name").
std::string_view prefix(const policy::compiled_json_field& f, std::size_t n) {
  std::size_t len = n - 1;
  for (std::size_t i = 0; i < n; ++i)
    len += f.path[i].size();
  return std::string_view(f.name).substr(0, len);
}

std::optional<violation> check_value(const policy::compiled_json_field& f, const json::value& v) {
  if (!has_type(v, f.type))
    return body_field_violation(f.name, core::str_cat("type ", policy::json_type_name(f.type)));
  if (f.pattern) {
    if (!v.is_string()) return body_field_violation(f.name, "type string");
    const json::string& s = v.get_string();
    if (!re2::RE2::FullMatch(std::string_view(s), *f.pattern))
      return body_field_violation(f.name, pattern_constraint(f.pattern->pattern()));
  }
  if (f.max_length) {
    std::uint64_t length = 0;
    if (v.is_string())
      length = code_points(v.get_string());
    else if (v.is_array())
      length = v.get_array().size();
    else
      return body_field_violation(f.name, "type string or array");
    if (length > *f.max_length)
      return body_field_violation(f.name, core::str_cat("max_length ", *f.max_length));
  }
  if (f.minimum || f.maximum) {
    if (!is_number(v)) return body_field_violation(f.name, "type number");
    if (f.minimum && compare(v, *f.minimum) < 0)
      return body_field_violation(f.name, core::str_cat("minimum ", *f.minimum));
    if (f.maximum && compare(v, *f.maximum) > 0)
      return body_field_violation(f.name, core::str_cat("maximum ", *f.maximum));
  }
  if (!f.enum_values.empty() && !enum_match(v, f.enum_values))
    return body_field_violation(f.name, "enum");
  return std::nullopt;
}

std::optional<violation> check_field(const policy::compiled_json_field& f,
                                     const json::object& root) {
  const json::object* obj = &root;
  for (std::size_t i = 0; i < f.path.size(); ++i) {
    const std::string& segment = f.path[i];
    const json::value* found = nullptr;
    for (const auto& kv : *obj) {
      const std::string_view key = kv.key();
      if (key == segment)
        found = &kv.value();
      else if (fold_equal(key, segment))
        return body_field_violation(prefix(f, i + 1), "exact name");
    }
    if (!found) {
      if (f.required) return body_field_violation(f.name, "required");
      return std::nullopt;
    }
    if (i + 1 == f.path.size()) return check_value(f, *found);
    if (!found->is_object()) return body_field_violation(prefix(f, i + 1), "type object");
    obj = &found->get_object();
  }
  return std::nullopt;
}

}  // namespace

std::optional<violation> parse_json(std::string_view body, boost::json::storage_ptr sp,
                                    boost::json::value& out) {
  unsigned char temp[512];
  json::parse_options options;
  options.max_depth = policy::max_json_depth;
  options.allow_comments = false;
  options.allow_trailing_commas = false;
  options.allow_invalid_utf8 = false;
  json::basic_parser<strict_handler> parser(options, std::move(sp), temp, sizeof temp);
  json::error_code ec;
  const std::size_t used = parser.write_some(false, body.data(), body.size(), ec);
  if (parser.handler().why() == strict_handler::failure::duplicate_key)
    return body_field_violation(parser.handler().key(), "duplicate key");
  if (parser.handler().why() == strict_handler::failure::nul_in_key)
    return body_violation("encoding");
  if (ec == json::error::too_deep)
    return body_violation(core::str_cat("max depth ", policy::max_json_depth));
  if (ec || used != body.size() || !parser.done()) return body_violation("valid JSON");
  out = parser.handler().release();
  return std::nullopt;
}

std::optional<violation> check_fields(const std::vector<policy::compiled_json_field>& fields,
                                      const boost::json::object& root) {
  for (const auto& f : fields)
    if (auto v = check_field(f, root)) return v;
  return std::nullopt;
}

namespace {

std::optional<violation> parse_and_check(const policy::compiled_body& checks,
                                         std::string_view body) {
  // Small documents are built in a stack buffer; bigger ones grow from the heap, all released
  // at once when the check is done.
  alignas(std::max_align_t) unsigned char arena[4096];
  json::monotonic_resource resource(arena, sizeof arena);
  json::value root;
  if (auto broken = parse_json(body, json::storage_ptr(&resource), root)) return broken;
  if (checks.fields.empty()) return std::nullopt;
  if (!root.is_object()) return body_violation("type object");
  return check_fields(checks.fields, root.get_object());
}

}  // namespace

std::optional<violation> check_json(const policy::compiled_body& checks, std::string_view body) {
  if (!checks.json) return std::nullopt;
  try {
    return parse_and_check(checks, body);
  } catch (const std::exception&) {
    // Out of memory building the document: refuse rather than forward it unchecked.
    return body_violation("valid JSON");
  }
}

}  // namespace airlock::filters::validation
