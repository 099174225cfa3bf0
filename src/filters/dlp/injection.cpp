#include "filters/dlp/injection.hpp"

#include "filters/dlp/decode.hpp"

#include <re2/re2.h>

#include <array>
#include <cctype>
#include <memory>
#include <string>

namespace airlock::filters::dlp {
namespace {

struct pattern {
  std::string_view cls;
  std::string_view re;
};

constexpr std::array<pattern, 12> kPatterns{{
    {"instruction-override",
     R"((?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|your|of)\s+)*(?:previous|prior|above|earlier|preceding|original)\s+(?:instructions|directions|directives|prompts|rules|guidelines))"},
    {"instruction-override",
     R"((?:output|reveal|print|show|repeat|dump|disclose)\s+(?:\w+\s+){0,3}(?:system\s+prompt|tool\s+definitions))"},
    {"instruction-override", R"((?:new|updated)\s+(?:priority\s+)?(?:directive|instructions)\s*:)"},
    {"authority-claim", R"((?:^|\n)\s*\[(?:system|admin|developer)\])"},
    {"authority-claim",
     R"(you\s+now\s+have\s+(?:full\s+)?(?:admin|administrator|root|elevated)\s+(?:access|privileges))"},
    {"authority-claim", R"(system\s+administrator\s+notice|important\s+system\s+update)"},
    {"tool-directive", R"((?:call|invoke|use)\s+the\s+[\w-]+\s+tool\s+(?:and|to|with))"},
    {"tool-directive",
     R"((?:execute|run)\s+the\s+following\s+(?:\w+\s+)?(?:command|code|script)|decode\s+(?:the\s+following|this)\s+(?:\w+\s+)?and\s+(?:execute|run))"},
    {"tool-directive", R"(\|\s*(?:ba|z)?sh\b|\$\(\s*cat\s)"},
    {"exfiltration-directive",
     R"((?:cat|output|send|upload|read|exfiltrate|post|print)\s+(?:\S+\s+){0,4}(?:/etc/(?:passwd|shadow)|~/\.ssh|id_rsa|\.aws/credentials))"},
    {"instruction-override", R"(you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak)\s+mode)"},
    {"tool-directive", R"(\bcurl\s+\S+\s*\|\s*(?:ba)?sh)"},
}};

const std::vector<std::unique_ptr<re2::RE2>>& compiled() {
  static const auto patterns = [] {
    std::vector<std::unique_ptr<re2::RE2>> out;
    re2::RE2::Options o;
    o.set_log_errors(false);
    for (const auto& p : kPatterns)
      out.push_back(std::make_unique<re2::RE2>(std::string(p.re), o));
    return out;
  }();
  return patterns;
}

bool is_quote(std::string_view text, std::size_t i) {
  const char c = text[i];
  if (c == '"' || c == '`') return true;
  // An apostrophe inside a word ("agent's") is not a quote.
  if (c == '\'') {
    const bool alpha_before = i > 0 && std::isalpha(static_cast<unsigned char>(text[i - 1]));
    const bool alpha_after =
        i + 1 < text.size() && std::isalpha(static_cast<unsigned char>(text[i + 1]));
    return !(alpha_before && alpha_after);
  }
  // U+201C/U+201D/U+2018/U+2019 (E2 80 9C..9D, 98..99): count the lead byte once.
  return static_cast<unsigned char>(c) == 0xE2 && i + 2 < text.size() &&
         static_cast<unsigned char>(text[i + 1]) == 0x80 &&
         (static_cast<unsigned char>(text[i + 2]) >= 0x98 &&
          static_cast<unsigned char>(text[i + 2]) <= 0x9D);
}

// Whether the match at [at, ...) is quoted or introduced as an example on its line.
bool mentioned(std::string_view text, std::size_t at) {
  std::size_t line = text.rfind('\n', at == 0 ? 0 : at - 1);
  line = line == std::string_view::npos ? 0 : line + 1;
  std::size_t quotes = 0, last = 0;
  for (std::size_t i = line; i < at; ++i)
    if (is_quote(text, i)) ++quotes, last = i;
  if (quotes % 2 == 1) {
    // A JSON string value ("key": "...") is data the agent reads, not a quotation.
    std::size_t k = last;
    while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t'))
      --k;
    const char before = k > 0 ? text[k - 1] : '\0';
    // ("key": "..." has a quote before its ':'; prose such as 'is: "...' does not.)
    const bool key_colon =
        before == ':' && k >= 2 &&
        text.substr(0, k - 1).find_last_not_of(" \t") != std::string_view::npos &&
        text[text.substr(0, k - 1).find_last_not_of(" \t")] == '"';
    if (!key_colon && before != '[' && before != ',' && before != '{') return true;
  }
  const std::size_t from = at > 24 ? at - 24 : 0;
  const std::string_view before = text.substr(from, at - from);
  for (std::string_view cue : {"like ", "such as ", "e.g.", "for example", "pattern", "phrases "})
    if (before.find(cue) != std::string_view::npos) return true;
  return false;
}

bool in_comment(std::string_view text, std::size_t at) {
  const auto open = text.rfind("<!--", at);
  if (open == std::string_view::npos) return false;
  const auto close = text.find("-->", open);
  return close == std::string_view::npos || close > at;
}

std::optional<std::string_view> find_in(std::string_view text) {
  const auto& res = compiled();
  for (std::size_t k = 0; k < res.size(); ++k) {
    re2::StringPiece input(text.data(), text.size());
    re2::StringPiece m;
    std::size_t from = 0;
    // Every match of this pattern until one counts (bounded by the text's length).
    while (from < text.size() &&
           res[k]->Match(input, from, text.size(), re2::RE2::UNANCHORED, &m, 1)) {
      const auto at = static_cast<std::size_t>(m.data() - text.data());
      if (in_comment(text, at)) return "hidden-instruction";
      if (!mentioned(text, at)) return kPatterns[k].cls;
      from = at + (m.size() > 0 ? m.size() : 1);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> find_injection(std::string_view original) {
  std::string text(original);
  if (auto folded = fold_confusables(text)) text = std::move(*folded);
  for (auto& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto cls = find_in(text)) return cls;
  // base64 runs of the original spelling, decoded: an instruction carried encoded.
  for (std::size_t i = 0; i < original.size();) {
    std::size_t j = i;
    while (j < original.size() && (std::isalnum(static_cast<unsigned char>(original[j])) ||
                                   original[j] == '+' || original[j] == '/' || original[j] == '='))
      ++j;
    if (j - i >= 24) {
      if (auto d = base64_decode(original.substr(i, j - i)); d && printable_share(*d) >= 0.95) {
        for (auto& c : *d)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (auto cls = find_in(*d)) return cls;
      }
    }
    i = j + 1;
  }
  return std::nullopt;
}

}  // namespace airlock::filters::dlp
