#include "filters/redaction/head_fields.hpp"

#include "core/ascii.hpp"

#include <string>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {
namespace http = boost::beast::http;

namespace {

bool framing_field(http::field f) {
  return f == http::field::content_length || f == http::field::transfer_encoding ||
         f == http::field::content_encoding || f == http::field::content_type;
}

}  // namespace

void redact_head(const engine& e, http::fields& head, hit_counts& hits) {
  std::vector<std::string_view> values;
  for (const auto& f : head)
    if (!framing_field(f.name())) values.push_back(f.value());
  if (values.empty()) return;
  auto redacted = redaction::redact_header_values(e, values, &hits);
  // Fields cannot be edited in place: the changed ones are removed and added back.
  std::vector<std::pair<std::string, std::string>> changed;
  std::size_t i = 0;
  for (auto f = head.begin(); f != head.end();) {
    if (framing_field(f->name())) {
      ++f;
      continue;
    }
    if (redacted[i] != f->value()) {
      changed.emplace_back(std::string(f->name_string()), std::move(redacted[i]));
      f = head.erase(f);
    } else {
      ++f;
    }
    ++i;
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
