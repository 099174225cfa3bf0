#include "filters/dlp/injection.hpp"

#include "filters/dlp/decode.hpp"
#include "filters/dlp/escapes.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

struct compiled_patterns {
  std::vector<std::unique_ptr<re2::RE2>> each;
  // All of them in one pass: which patterns match at all (most texts: none), so that only
  // those run again one by one to find where.
  std::unique_ptr<re2::RE2::Set> any;
};

// What separates two words of a phrase, besides ASCII white space (the patterns' \s): a
// line break or tab escaped in a JSON string ("ignore all\nprevious"), a no-break space
// written as a character reference (the text is folded first, so the characters themselves
// are spaces by then), an HTML tag ("ignore <b>all</b> previous"), Markdown emphasis
// ("ignore **all** previous"). A reader, and a model, sees the words next to each other.
constexpr std::string_view kGap =
    R"((?:\s|\\[nrt]|&nbsp;|&#160;|&#x0*a0;|</?[a-z][^<>]{0,64}>|[*_~`]))";

// A pattern as written (with \s for a gap between words, \n for a line break) made to read
// the gaps above too.
std::string with_gaps(std::string_view re) {
  std::string out;
  for (std::size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '\\' && i + 1 < re.size() && (re[i + 1] == 's' || re[i + 1] == 'n')) {
      out.append(re[i + 1] == 's' ? kGap : std::string_view(R"((?:\n|\\n))"));
      ++i;
    } else if (re[i] == '\\' && i + 1 < re.size()) {
      out.append(re.substr(i, 2));  // any other escape, whole (\S, \w, \b, \|, \[)
      ++i;
    } else {
      out.push_back(re[i]);
    }
  }
  return out;
}

const compiled_patterns& compiled() {
  static const compiled_patterns patterns = [] {
    compiled_patterns out;
    re2::RE2::Options o;
    o.set_log_errors(false);
    o.set_max_mem(32 << 20);
    out.any = std::make_unique<re2::RE2::Set>(o, re2::RE2::UNANCHORED);
    for (const auto& p : kPatterns) {
      const std::string re = with_gaps(p.re);
      out.each.push_back(std::make_unique<re2::RE2>(re, o));
      out.any->Add(re, nullptr);
    }
    if (!out.any->Compile()) out.any.reset();  // then every pattern runs on its own
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

// Whether a quote closes after `end` on the same line: a quotation is closed; an opening quote
// alone in front of an instruction makes no mention of it.
bool closed_after(std::string_view text, std::size_t end) {
  for (std::size_t i = end; i < text.size() && text[i] != '\n'; ++i)
    if (is_quote(text, i)) return true;
  return false;
}

// Whether the match at [at, end) is quoted or introduced as an example on its line.
bool mentioned(std::string_view text, std::size_t at, std::size_t end) {
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
    if (!key_colon && before != '[' && before != ',' && before != '{' && closed_after(text, end))
      return true;
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

// The patterns that match somewhere in text, in kPatterns order (all of them when the set
// cannot tell: not compiled, or its DFA ran out of memory).
std::vector<int> candidates(std::string_view text) {
  const auto& c = compiled();
  std::vector<int> out;
  if (c.any) {
    re2::RE2::Set::ErrorInfo info{};
    if (c.any->Match(re2::StringPiece(text.data(), text.size()), &out, &info)) {
      std::sort(out.begin(), out.end());
      return out;
    }
    if (info.kind == re2::RE2::Set::kNoError) return out;
    out.clear();
  }
  for (int k = 0; k < static_cast<int>(c.each.size()); ++k)
    out.push_back(k);
  return out;
}

std::optional<std::string_view> find_in(std::string_view text) {
  const auto& res = compiled().each;
  for (const int k : candidates(text)) {
    re2::StringPiece input(text.data(), text.size());
    re2::StringPiece m;
    std::size_t from = 0;
    // Every match of this pattern until one counts (bounded by the text's length).
    while (from < text.size() &&
           res[k]->Match(input, from, text.size(), re2::RE2::UNANCHORED, &m, 1)) {
      const auto at = static_cast<std::size_t>(m.data() - text.data());
      if (in_comment(text, at)) return "hidden-instruction";
      if (!mentioned(text, at, at + m.size())) return kPatterns[k].cls;
      from = at + (m.size() > 0 ? m.size() : 1);
    }
  }
  return std::nullopt;
}

// ASCII only, inline: these run over every byte of a scanned body (libc's tolower and isalnum
// are a call each, and locale-dependent).
char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
}

// A lower-cased copy, in one pass, eight bytes at a time: for each byte that is ASCII and in
// 'A'..'Z', set bit 5 (the classic SWAR range test on the low seven bits).
std::string lowered(std::string_view in) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  std::string out(in.size(), '\0');
  std::size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    std::uint64_t x;
    std::memcpy(&x, in.data() + i, 8);
    const std::uint64_t low7 = x & ~highs;
    const std::uint64_t above_z = low7 + ones * (0x7f - 'Z');  // high bit: byte > 'Z'
    const std::uint64_t from_a = low7 + ones * (0x80 - 'A');   // high bit: byte >= 'A'
    const std::uint64_t upper = (from_a ^ above_z) & ~x & highs;
    x |= upper >> 2;
    std::memcpy(out.data() + i, &x, 8);
  }
  for (; i < in.size(); ++i)
    out[i] = ascii_lower(in[i]);
  return out;
}

// Prompt injection in `original` as it is (folded, lower-cased) and in its base64 runs.
std::optional<std::string_view> find_as_written(std::string_view original);

}  // namespace

std::optional<std::string_view> find_injection(std::string_view original) {
  auto cls = find_as_written(original);
  // The text as the agent's JSON parser or HTML-to-text step hands it to the model, where an
  // escape stands for a letter ("\u0069gnore", "&#105;gnore"): read once more unescaped.
  if (!cls)
    read_unescaped(original, [&](std::string_view unescaped) {
      cls = find_as_written(unescaped);
      return cls.has_value();
    });
  return cls;
}

namespace {

std::optional<std::string_view> find_as_written(std::string_view original) {
  const auto folded = fold_confusables(original);
  const std::string text = lowered(folded ? std::string_view(*folded) : original);
  if (auto cls = find_in(text)) return cls;
  // base64 runs of the original spelling (24 bytes or more), decoded: an instruction carried
  // encoded. The byte before `i` is never a base64 byte, so a run of 24 starting in
  // [i, i + 23] covers i + 23: where that byte is not base64, no run starts there.
  constexpr std::size_t kMinRun = 24;
  for (std::size_t i = 0; i + kMinRun <= original.size();) {
    if (!base64_byte(original[i + kMinRun - 1])) {
      i += kMinRun;
      continue;
    }
    std::size_t s = i + kMinRun - 1, j = s;
    while (s > i && base64_byte(original[s - 1]))
      --s;
    while (j < original.size() && base64_byte(original[j]))
      ++j;
    if (j - s >= kMinRun) {
      // Mostly text is read as it is; otherwise its printable stretches, so that bytes put
      // around an instruction (another script's letters, binary) do not hide it.
      if (auto d = base64_decode(original.substr(s, j - s))) {
        std::string t = printable_share(*d) >= 0.95 ? std::move(*d) : printable_runs(*d);
        for (auto& c : t)
          c = ascii_lower(c);
        if (auto cls = find_in(t)) return cls;
      }
    }
    i = j + 1;
  }
  return std::nullopt;
}

}  // namespace

}  // namespace airlock::filters::dlp
