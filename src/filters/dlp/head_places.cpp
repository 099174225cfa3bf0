#include "filters/dlp/head_places.hpp"

#include "core/ascii.hpp"
#include "filters/dlp/decode.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>

namespace airlock::filters::dlp {
namespace http = boost::beast::http;

// A host name is case-insensitive (RFC 4343) and arrives lower-cased, while a key may be upper
// case only (an AWS key id); and a key may be cut at a dot or a hyphen ("AKIA1234.5678...",
// "x-AKIA..."). Read besides the name as sent: the name upper-cased, and each run of two or more
// of its parts (split at '.' and '-') joined, upper-cased, so that a key spread over labels is
// seen whole and a part glued to it does not hide it. A name has at most 127 labels; the runs
// are bounded by kMaxParts parts (a name with more is refused as chained labels anyway).
std::vector<std::string> host_readings(std::string_view host) {
  constexpr std::size_t kMaxParts = 16;
  std::vector<std::string> out;
  out.push_back(core::upper(host));
  std::vector<std::string_view> parts;
  for (std::size_t pos = 0; pos <= host.size() && parts.size() < kMaxParts;) {
    const auto end = std::min(host.find_first_of(".-", pos), host.size());
    if (end > pos) parts.push_back(host.substr(pos, end - pos));
    pos = end + 1;
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string run(parts[i]);
    for (std::size_t j = i + 1; j < parts.size(); ++j) {
      run += parts[j];
      out.push_back(core::upper(run));
    }
  }
  return out;
}

// Sec-WebSocket-Key is a random nonce (RFC 6455 section 4.1), high entropy by design: it is
// spared the high-entropy class only on a WebSocket upgrade the rule allows, and only when it
// is what the RFC says (the base64 of 16 bytes: 22 characters, the last carrying 2 bits, then
// "=="). Any other use of the field is read as a header is.
bool websocket_nonce(const exchange& ex, std::string_view value) {
  if (ex.upgrade != "websocket" || ex.rule == nullptr || ex.request->method() != http::verb::get)
    return false;
  const auto& allowed = ex.rule->upgrades;
  if (std::find(allowed.begin(), allowed.end(), "websocket") == allowed.end()) return false;
  if (value.size() != 24 || !value.ends_with("==")) return false;
  const auto nonce = base64_decode(value);
  const char end = value[21];  // 128 bits in 22 characters: its low 4 bits are zero
  return nonce && nonce->size() == 16 && (end == 'A' || end == 'Q' || end == 'g' || end == 'w');
}

head_places places_of(const exchange& ex) {
  head_places out;
  const auto& host = ex.target.host;
  if (!host.is_ip()) {
    out.pieces.push_back({host.text, scanner::kind::url, "host"});
    for (auto& r : host_readings(host.text))
      out.pieces.push_back({out.readings.emplace_back(std::move(r)), scanner::kind::url, "host"});
  }
  if (ex.connect) return out;
  out.pieces.push_back({ex.path, scanner::kind::url, "path"});
  const auto mark = ex.path_and_query.find('?');
  if (mark != std::string::npos) {
    out.query = std::string_view(ex.path_and_query).substr(mark + 1);
    out.pieces.push_back({out.query, scanner::kind::url, "query"});
  }
  // The method is the agent's token when the rule lists no methods (RFC 9110 section 9.1).
  out.pieces.push_back({ex.request->method_string(), scanner::kind::header, "method"});
  for (const auto& field : *ex.request) {
    const auto name = field.name_string();
    // A field name is the agent's text as much as its value is; and case-insensitive (HTTP/2
    // sends it in lower case), so it is read upper-cased too.
    out.pieces.push_back({name, scanner::kind::header, "header-name"});
    if (auto up = core::upper(name); up != name)
      out.pieces.push_back(
          {out.readings.emplace_back(std::move(up)), scanner::kind::header, "header-name"});
    if (core::iequals(name, "host") || core::iequals(name, "proxy-authorization") ||
        core::iequals(name, "proxy-connection"))
      continue;
    if (core::iequals(name, "sec-websocket-key") && websocket_nonce(ex, field.value())) {
      out.nonce = field.value();
      continue;
    }
    const bool cookie = core::iequals(name, "cookie");
    out.pieces.push_back({field.value(), cookie ? scanner::kind::url : scanner::kind::header,
                          cookie ? "cookie" : "header"});
  }
  return out;
}

}  // namespace airlock::filters::dlp
