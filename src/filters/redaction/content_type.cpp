#include "filters/redaction/content_type.hpp"

#include "core/ascii.hpp"

#include <array>
#include <iterator>
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

// The charset parameter's value, unquoted; empty when there is none. Several charset parameters
// (clients differ in which one they take), or an empty one, read as kUnreadable, which no
// charset is called.
constexpr std::string_view kUnreadable = "(unreadable)";
std::string_view charset_of(std::string_view params) {
  std::string_view found;
  while (!params.empty()) {
    const auto semi = params.find(';');
    std::string_view p = core::trim_ows(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const auto eq = p.find('=');
    if (eq == std::string_view::npos || !iequals(core::trim_ows(p.substr(0, eq)), "charset"))
      continue;
    if (!found.empty()) return kUnreadable;
    std::string_view v = core::trim_ows(p.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    found = v.empty() ? kUnreadable : v;
  }
  return found;
}

// Charsets in which every ASCII character is its own ASCII byte and no byte below 0x80 means
// anything else, so that a pattern written in ASCII sees a secret written in them: UTF-8, ASCII,
// the ISO 8859 and Windows code pages, KOI8, and the multi-byte CJK encodings whose lead bytes
// are all above 0x7F. Anything else (UTF-16/32, UTF-7, EBCDIC, the escape-based ISO-2022 and
// HZ, names no one registered) is unreadable to the redactors: fail closed.
bool ascii_compatible(std::string_view charset) {
  static constexpr std::array<std::string_view, 14> kExact{
      "utf-8",  "utf8",   "us-ascii", "ascii", "shift_jis", "sjis", "windows-31j",
      "euc-jp", "euc-kr", "gb2312",   "gbk",   "gb18030",   "big5", "big5-hkscs"};
  static constexpr std::array<std::string_view, 8> kFamilies{
      "iso-8859-", "iso8859-", "iso_8859-", "latin", "windows-125", "cp125", "koi8-", "tis-620"};
  for (std::string_view c : kExact)
    if (iequals(charset, c)) return true;
  for (std::string_view f : kFamilies)
    if (istarts_with(charset, f) && charset.size() <= f.size() + 4) return true;
  return iequals(charset, "windows-874") || iequals(charset, "cp932");
}

}  // namespace

body_class classify_content_type(std::string_view content_type) noexcept {
  const auto semi = content_type.find(';');
  const std::string_view media = core::trim_ows(content_type.substr(0, semi));
  const std::string_view params =
      semi == std::string_view::npos ? std::string_view() : content_type.substr(semi + 1);
  if (media.empty()) return {body_kind::text, framing::none};

  // Only a text's charset matters (a PNG has none worth reading); a text one the redactors
  // cannot read is refused below.
  const std::string_view charset = charset_of(params);
  const bool readable = charset.empty() || ascii_compatible(charset);

  // application/grpc, application/grpc+CODEC, application/grpc-web(+CODEC), and the Connect
  // protocol's streams (application/connect+CODEC): the same five-byte envelope. (gRPC-Web's
  // -text variant is base64 of it: guarded as opaque binary, its messages not joined.)
  for (std::string_view g : {"application/grpc", "application/grpc-web"})
    if (iequals(media, g) ||
        (istarts_with(media, g) && media.size() > g.size() && media[g.size()] == '+'))
      return {body_kind::binary, framing::none, true};
  if (istarts_with(media, "application/connect+") && media.size() > 20)
    return {body_kind::binary, framing::none, true};

  const body_kind text = readable ? body_kind::text : body_kind::unsupported;
  if (iequals(media, "text/event-stream")) return {text, framing::events};
  // (JSON text sequences, RFC 7464: a record starts with RS and ends with LF.)
  static constexpr std::array<std::string_view, 5> kLines{
      "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonl",
      "application/json-seq"};
  for (std::string_view m : kLines)
    if (iequals(media, m)) return {text, framing::lines};

  if (istarts_with(media, "text/")) return {text, framing::none};
  static constexpr std::array<std::string_view, 10> kText{
      "application/json",       "application/xml",
      "application/javascript", "application/x-javascript",
      "application/ecmascript", "application/x-www-form-urlencoded",
      "application/yaml",       "application/x-yaml",
      "application/graphql",    "application/graphql-response+json"};
  for (std::string_view m : kText)
    if (iequals(media, m)) return {text, framing::none};
  if (iends_with(media, "+json") || iends_with(media, "+xml") || iends_with(media, "+yaml"))
    return {text, framing::none};
  return {body_kind::binary, framing::none};
}

bool utf16_or_32_charset(std::string_view content_type) noexcept {
  const auto semi = content_type.find(';');
  if (semi == std::string_view::npos) return false;
  const std::string_view charset = charset_of(content_type.substr(semi + 1));
  return istarts_with(charset, "utf-16") || istarts_with(charset, "utf-32") ||
         istarts_with(charset, "utf16") || istarts_with(charset, "utf32");
}

bool sniffs_as_utf16_or_32(std::string_view start) noexcept {
  start = start.substr(0, kSniffBytes);
  return start.starts_with("\xFE\xFF") || start.starts_with("\xFF\xFE") ||
         start.find('\0') != std::string_view::npos;
}

std::optional<std::string_view> sole_content_type(const boost::beast::http::fields& head) {
  const auto [first, last] = head.equal_range(boost::beast::http::field::content_type);
  if (first == last) return std::string_view();
  if (std::next(first) != last) return std::nullopt;
  return first->value();
}

}  // namespace airlock::filters::redaction
