#include "filters/redaction/content_type.hpp"

#include "core/ascii.hpp"

#include <array>
#include <string>

namespace airlock::filters::redaction {
using core::iequals;
namespace {

bool iends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// The charset parameter's value, unquoted, or empty.
std::string_view charset_of(std::string_view params) {
  while (!params.empty()) {
    const auto semi = params.find(';');
    std::string_view p = core::trim_ows(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const auto eq = p.find('=');
    if (eq == std::string_view::npos || !iequals(core::trim_ows(p.substr(0, eq)), "charset"))
      continue;
    std::string_view v = core::trim_ows(p.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return {};
}

}  // namespace

body_class classify_content_type(std::string_view content_type) noexcept {
  const auto semi = content_type.find(';');
  const std::string_view media = core::trim_ows(content_type.substr(0, semi));
  const std::string_view params =
      semi == std::string_view::npos ? std::string_view() : content_type.substr(semi + 1);
  if (media.empty()) return {body_kind::text, framing::none};

  const std::string_view charset = charset_of(params);
  if (istarts_with(charset, "utf-16") || istarts_with(charset, "utf-32") ||
      istarts_with(charset, "ucs-2") || istarts_with(charset, "ucs-4") ||
      istarts_with(charset, "utf16") || istarts_with(charset, "utf32"))
    return {body_kind::unsupported, framing::none};

  if (iequals(media, "text/event-stream")) return {body_kind::text, framing::events};
  static constexpr std::array<std::string_view, 4> kLines{
      "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonl"};
  for (std::string_view m : kLines)
    if (iequals(media, m)) return {body_kind::text, framing::lines};

  if (istarts_with(media, "text/")) return {body_kind::text, framing::none};
  static constexpr std::array<std::string_view, 11> kText{"application/json",
                                                          "application/json-seq",
                                                          "application/xml",
                                                          "application/javascript",
                                                          "application/x-javascript",
                                                          "application/ecmascript",
                                                          "application/x-www-form-urlencoded",
                                                          "application/yaml",
                                                          "application/x-yaml",
                                                          "application/graphql",
                                                          "application/graphql-response+json"};
  for (std::string_view m : kText)
    if (iequals(media, m)) return {body_kind::text, framing::none};
  if (iends_with(media, "+json") || iends_with(media, "+xml") || iends_with(media, "+yaml"))
    return {body_kind::text, framing::none};
  return {body_kind::binary, framing::none};
}

}  // namespace airlock::filters::redaction
