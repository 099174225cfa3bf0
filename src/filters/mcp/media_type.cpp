#include "filters/mcp/media_type.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "filters/validation/text.hpp"

#include <iterator>

namespace airlock::filters::mcp {
namespace {

namespace http = boost::beast::http;

// RFC 9110 section 5.6.2: tchar.
bool is_tchar(char c) {
  return core::is_alnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A token at the front of `s`, taken off it (empty: none there).
std::string_view take_token(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_tchar(s[n]))
    ++n;
  const std::string_view t = s.substr(0, n);
  s.remove_prefix(n);
  return t;
}

void skip_ows(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
}

// RFC 9110 section 5.6.4: a quoted-string at the front of `s` (which starts with DQUOTE),
// unquoted into `out`, taken off `s`. False when it does not end or holds a control character.
bool take_quoted(std::string_view& s, std::string& out) {
  std::size_t i = 1;
  for (; i < s.size() && s[i] != '"'; ++i) {
    char c = s[i];
    if (c == '\\') {
      if (++i == s.size()) return false;
      c = s[i];
    }
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
    out.push_back(c);
  }
  if (i == s.size()) return false;
  s.remove_prefix(i + 1);
  return true;
}

}  // namespace

std::optional<media_type> parse_media_type(std::string_view s) {
  media_type m;
  skip_ows(s);
  m.type = core::lower(take_token(s));
  if (m.type.empty() || s.empty() || s.front() != '/') return std::nullopt;
  s.remove_prefix(1);
  m.subtype = core::lower(take_token(s));
  if (m.subtype.empty()) return std::nullopt;
  for (;;) {
    skip_ows(s);
    if (s.empty()) return m;
    if (s.front() != ';') return std::nullopt;
    s.remove_prefix(1);
    skip_ows(s);
    if (s.empty()) return m;  // a trailing ";" (RFC 9110 allows empty list elements here)
    std::string name = core::lower(take_token(s));
    if (name.empty() || s.empty() || s.front() != '=') return std::nullopt;
    s.remove_prefix(1);
    std::string value;
    if (!s.empty() && s.front() == '"') {
      if (!take_quoted(s, value)) return std::nullopt;
    } else {
      value = std::string(take_token(s));
      if (value.empty()) return std::nullopt;
    }
    m.params.emplace_back(std::move(name), std::move(value));
  }
}

body_reading read_body_head(const http::fields& head) {
  body_reading out;
  // RFC 9110 section 8.4: codings are listed in the order applied, over one or more lines.
  for (const auto& field : head) {
    if (field.name() != http::field::content_encoding) continue;
    std::string_view list = field.value();
    while (!list.empty()) {
      const auto comma = list.find(',');
      const std::string_view coding = core::trim_ows(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      if (!coding.empty() && !core::iequals(coding, "identity")) {
        out.unreadable = core::str_cat("Content-Encoding '", validation::printable(coding),
                                       "' (only unencoded bodies are read)");
        return out;
      }
    }
  }
  // (equal_range spans the lines in between too: it ends after the last line of that name.)
  const auto [first, last] = head.equal_range(http::field::content_type);
  if (first == last) return out;
  if (std::next(first) != last) {
    out.unreadable = "Content-Type in several field lines";
    return out;
  }
  out.type = parse_media_type(first->value());
  if (!out.type) {
    out.unreadable = core::str_cat("Content-Type '", validation::printable(first->value()),
                                   "' does not parse (RFC 9110 section 8.3.1)");
    return out;
  }
  bool charset = false;
  for (const auto& [name, value] : out.type->params) {
    if (name != "charset") continue;
    if (charset) {
      out.unreadable = "several charset parameters";
      return out;
    }
    charset = true;
    if (!core::iequals(value, "utf-8")) {
      out.unreadable =
          core::str_cat("charset '", validation::printable(value), "' (only UTF-8 is read)");
      return out;
    }
  }
  return out;
}

std::string unreadable_request(const http::fields& head) {
  body_reading r = read_body_head(head);
  if (!r.unreadable.empty()) return std::move(r.unreadable);
  if (!r.type) return "no Content-Type (application/json expected)";
  if (!r.type->is("application", "json"))
    return core::str_cat("Content-Type '", validation::printable(r.type->type), "/",
                         validation::printable(r.type->subtype), "' (application/json expected)");
  for (const auto& [name, value] : r.type->params)
    if (name != "charset")
      return core::str_cat("Content-Type parameter '", validation::printable(name),
                           "' (application/json takes charset=utf-8 only)");
  return {};
}

}  // namespace airlock::filters::mcp
