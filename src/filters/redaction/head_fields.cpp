#include "filters/redaction/head_fields.hpp"

#include "core/ascii.hpp"

#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {
namespace http = boost::beast::http;

namespace {

// The fields the codec frames the body by: their values were checked (a number, "chunked",
// else refused) and carry nothing else; redacting them would break the framing.
bool framing_field(http::field f) {
  return f == http::field::content_length || f == http::field::transfer_encoding;
}

// Which names carry a value, read as sent and upper-cased: an HTTP/2 origin lower-cases every
// name (RFC 9113 section 8.2.1), and an AWS key id or a base32 seed is upper case.
std::vector<bool> names_with_values(const engine& e, const http::fields& head, hit_counts& hits) {
  std::vector<std::string_view> names;
  for (const auto& f : head)
    names.push_back(f.name_string());
  const auto as_sent = redaction::redact_header_values(e, names, &hits);
  std::vector<bool> hit(names.size());
  std::vector<std::string> upper;
  std::vector<std::size_t> which;
  for (std::size_t n = 0; n < names.size(); ++n) {
    hit[n] = as_sent[n] != names[n];
    if (hit[n]) continue;
    upper.push_back(core::upper(names[n]));
    which.push_back(n);
  }
  const std::vector<std::string_view> upper_views(upper.begin(), upper.end());
  const auto upper_redacted = redaction::redact_header_values(e, upper_views, &hits);
  for (std::size_t k = 0; k < which.size(); ++k)
    hit[which[k]] = upper_redacted[k] != upper[k];
  return hit;
}

}  // namespace

void redact_head(const engine& e, http::fields& head, hit_counts& hits) {
  std::vector<std::string_view> values;
  for (const auto& f : head)
    if (!framing_field(f.name())) values.push_back(f.value());
  auto redacted = redaction::redact_header_values(e, values, &hits);
  // A name that carries a value has no redacted spelling (brackets are not token characters,
  // RFC 9110 section 5.1): the field goes.
  const auto name_hits = names_with_values(e, head, hits);
  // Fields cannot be edited in place: the changed ones are removed and added back.
  std::vector<std::pair<std::string, std::string>> changed;
  std::size_t i = 0, n = 0;
  for (auto f = head.begin(); f != head.end(); ++n) {
    const bool framing = framing_field(f->name());
    const bool value_hit = !framing && redacted[i] != f->value();
    if (value_hit && !name_hits[n])
      changed.emplace_back(std::string(f->name_string()), std::move(redacted[i]));
    if (!framing) ++i;
    f = name_hits[n] || value_hit ? head.erase(f) : std::next(f);
  }
  for (auto& [name, value] : changed)
    head.insert(name, value);
}

void narrow_accept_encoding(http::fields& head) {
  std::string kept;
  for (const auto& f : head) {
    if (f.name() != http::field::accept_encoding) continue;
    std::string_view list = f.value();
    while (!list.empty()) {
      const auto comma = list.find(',');
      const std::string_view member = core::trim_ows(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      const std::string coding = core::lower(core::trim_ows(member.substr(0, member.find(';'))));
      if (coding == "gzip" || coding == "x-gzip" || coding == "deflate" || coding == "identity") {
        if (!kept.empty()) kept += ", ";
        kept += member;
      }
    }
  }
  head.set(http::field::accept_encoding, kept.empty() ? std::string("identity") : kept);
}

void ask_for_whole_representation(http::fields& head) {
  head.erase(http::field::range);
  head.erase(http::field::if_range);
}

}  // namespace airlock::filters::redaction
