#include "filters/dlp/record_scrub.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "filters/dlp/head_places.hpp"

#include <deque>
#include <vector>

namespace airlock::filters::dlp {
namespace {

// Whether `text` holds a finding, read as sent and upper-cased.
bool holds(const scanner& s, std::string_view text, scanner::kind how) {
  findings found;
  const std::string up = core::upper(text);
  std::vector<scanner::piece> pieces{{text, how, "record"}};
  if (up != text) pieces.push_back({up, how, "record"});
  s.scan_all(pieces, found);
  return !found.empty();
}

}  // namespace

std::string redact_segments(const scanner& s, std::string_view path) {
  std::string out;
  bool any = false;
  for (std::size_t pos = 0; pos <= path.size();) {
    auto slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    const auto segment = path.substr(pos, slash - pos);
    findings here;
    if (!segment.empty()) s.scan(segment, scanner::kind::url, "path", here);
    any = any || !here.empty();
    out += here.empty() ? segment : kRedacted;
    if (slash < path.size()) out += '/';
    pos = slash + 1;
  }
  return any ? out : std::string(kRedacted);
}

std::string redacted_host(std::string_view host) {
  auto dot = host.rfind('.');
  if (dot != std::string_view::npos && dot > 0) dot = host.rfind('.', dot - 1);
  return dot == std::string_view::npos ? std::string(kRedacted)
                                       : core::str_cat(kRedacted, host.substr(dot));
}

std::optional<std::string> scrub_path(const scanner& s, std::string_view path) {
  findings found;
  if (path.empty()) return std::nullopt;
  s.scan(path, scanner::kind::url, "path", found);
  if (found.empty()) return std::nullopt;
  return redact_segments(s, path);
}

std::optional<std::string> scrub_host(const scanner& s, std::string_view host) {
  if (host.empty() || host.starts_with(kRedacted)) return std::nullopt;
  std::vector<scanner::piece> pieces{{host, scanner::kind::url, "host"}};
  const std::vector<std::string> readings = host_readings(host);
  for (const auto& r : readings)
    pieces.push_back({r, scanner::kind::url, "host"});
  findings found;
  s.scan_all(pieces, found);
  if (found.empty()) return std::nullopt;
  return redacted_host(host);
}

std::optional<std::string> scrub_method(const scanner& s, std::string_view method) {
  findings found;
  s.scan(method, scanner::kind::header, "method", found);
  if (found.empty()) return std::nullopt;
  return std::string(kRedacted);
}

scrubbed_text scrub_text(const scanner& s, std::string_view text) {
  if (text.empty() || !holds(s, text, scanner::kind::url)) return {};
  std::string cut = s.engine().redact(text);
  if (holds(s, cut, scanner::kind::url)) return {scrubbed_text::outcome::withheld, {}};
  return {scrubbed_text::outcome::cut, std::move(cut)};
}

namespace {

constexpr std::string_view kWithheld =
    "(detail withheld: DLP found a secret in what it repeats of the request)";

void scrub_fields(const scanner& s, exchange_record& rec, record_scrub_state& state) {
  if (!state.head_read) {
    if (auto host = scrub_host(s, rec.host)) rec.host = std::move(*host);
    if (auto path = scrub_path(s, rec.path)) rec.path = std::move(*path);
    if (auto method = scrub_method(s, rec.method)) rec.method = std::move(*method);
    state.head_read = true;
  }
  if (rec.detail != state.detail_read) {
    auto d = scrub_text(s, rec.detail);
    if (d.what == scrubbed_text::outcome::cut) rec.detail = std::move(d.text);
    if (d.what == scrubbed_text::outcome::withheld) rec.detail = kWithheld;
    state.detail_read = rec.detail;
  }
  if (rec.answer && rec.answer.get() != state.answer_read) {
    // An MCP refusal's JSON-RPC error: its message, and the id the protocol makes it repeat.
    auto a = scrub_text(s, rec.answer->body);
    if (a.what == scrubbed_text::outcome::withheld) rec.answer.reset();
    if (a.what == scrubbed_text::outcome::cut) {
      auto cut = std::make_shared<protocol_answer>(*rec.answer);
      cut->body = std::move(a.text);
      rec.answer = std::move(cut);
    }
    state.answer_read = rec.answer.get();
  }
}

}  // namespace

void scrub_record(const scanner& s, exchange_record& rec, record_scrub_state& state) noexcept {
  try {
    scrub_fields(s, rec, state);
  } catch (...) {
    // The reading could not run (memory): repeat none of what it was to read. (Clearing cannot
    // throw; the markers are only a courtesy.)
    rec.answer.reset();
    if (!state.head_read) {
      rec.host.clear();
      rec.path.clear();
      rec.method.clear();
    }
    rec.detail.clear();
    try {
      if (!state.head_read) rec.host = rec.path = rec.method = kRedacted;
      rec.detail = kWithheld;
    } catch (...) {
    }
    state.head_read = true;
    state.detail_read = {};
  }
}

}  // namespace airlock::filters::dlp
