#include "filters/redaction/engine.hpp"

#include "core/str_cat.hpp"
#include "filters/redaction/engine_impl.hpp"
#include "filters/redaction/secret_spellings.hpp"
#include "filters/redaction/stream.hpp"

#include <algorithm>

namespace airlock::filters::redaction {
namespace {

// Below this the window would cut ordinary tokens (a GitHub fine-grained token is 93 bytes).
constexpr std::size_t kMinOverlap = 256;

// Names end up in replacements ("[REDACTED:secret:github]"), audit records and metric
// labels: keep them to a plain token.
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

RE2::Options byte_options() {
  RE2::Options o;
  // Bodies are bytes, often not valid UTF-8; every built-in pattern is ASCII.
  o.set_encoding(RE2::Options::EncodingLatin1);
  // RE2 would log to stderr, with the pattern; a secret's pattern is its value.
  o.set_log_errors(false);
  return o;
}

// Whether an RE2 pattern can hold only at the start or end of the text: `^`, `$`, `\A` or
// `\z` outside a character class (`[^...]` is a negated class, not an anchor). Errs towards
// yes: an escaped character is skipped, a class runs to its first unescaped `]` after the
// first member (re2/syntax.h: `[]a]` holds `]`).
bool has_anchor(const std::string& re) {
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\') {
      if (!in_class && i + 1 < re.size() && (re[i + 1] == 'A' || re[i + 1] == 'z')) return true;
      ++i;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
      if (i + 1 < re.size() && re[i + 1] == '^') ++i;
      if (i + 1 < re.size() && re[i + 1] == ']') ++i;
    } else if (c == '^' || c == '$') {
      return true;
    }
  }
  return false;
}

}  // namespace

engine::engine(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
engine::~engine() = default;

namespace {
// A secret's spellings are its hints' literals (`literal` says only how one is matched).
template <class F>
void for_each_secret_spelling(const engine::impl& im, F&& f) {
  for (const auto& r : im.redactors)
    if (!r.hint.literals.empty() && im.labels[r.label].name.starts_with("secret:"))
      f(std::string_view(r.hint.literals.front().text));
}
}  // namespace

const secret_automaton& engine::secret_starts() const noexcept {
  return *impl_->secret_starts;
}

build_result engine::build(std::vector<redactor_spec> redactors,
                           std::vector<literal_secret> secrets, const engine_options& opts) {
  auto im = std::make_unique<impl>();
  std::vector<std::string> errors;
  std::vector<std::string> patterns;  // what goes into the set, index for index
  const RE2::Options options = byte_options();
  std::size_t overlap = std::max(opts.overlap, kMinOverlap);

  auto label_for = [&](std::string name, std::string replacement) {
    for (std::size_t i = 0; i < im->labels.size(); ++i)
      if (im->labels[i].name == name) return static_cast<std::uint32_t>(i);
    im->labels.push_back({std::move(name), std::move(replacement)});
    return static_cast<std::uint32_t>(im->labels.size() - 1);
  };

  for (const literal_secret& s : secrets) {
    if (!valid_name(s.name)) {
      errors.push_back(core::str_cat("secret name '", s.name, "' is not a plain token"));
      continue;
    }
    if (s.value.empty()) {
      errors.push_back(core::str_cat("secret '", s.name, "' is empty"));
      continue;
    }
    if (s.value.size() > opts.max_secret_length) {
      errors.push_back(
          core::str_cat("secret '", s.name, "' is longer than ", opts.max_secret_length, " bytes"));
      continue;
    }
    const std::uint32_t l = label_for(core::str_cat("secret:", s.name),
                                      core::str_cat("[REDACTED:secret:", s.name, "]"));
    // Each spelling a literal redactor of its own; the base64 ones late in the prefilter.
    auto add_spelling = [&](const std::string& spelling, bool late) {
      overlap = std::max(overlap, spelling.size());
      std::string pattern = RE2::QuoteMeta(spelling);
      auto re = std::make_unique<RE2>(pattern, options);
      if (!re->ok()) {  // not re->error(): it would quote the value
        errors.push_back(core::str_cat("secret '", s.name, "' cannot be compiled"));
        return false;
      }
      compiled_redactor c;
      c.re = std::move(re);
      c.label = l;
      c.max_length = spelling.size();
      c.literal = true;
      c.hint.literals.push_back({spelling, false, 0});
      c.hint.late = late;
      im->redactors.push_back(std::move(c));
      patterns.push_back(std::move(pattern));
      return true;
    };
    if (!opts.secret_spellings) {
      add_spelling(s.value, false);
      continue;
    }
    bool ok = true;
    for (const std::string& spelling : secret_spellings(s.value))
      ok = ok && add_spelling(spelling, false);
    for (const std::string& spelling : secret_base64_spellings(s.value))
      ok = ok && add_spelling(spelling, true);
    for (const std::string& spelling : secret_hex_base32_spellings(s.value))
      ok = ok && add_spelling(spelling, true);
    for (const std::string& spelling : secret_wide_spellings(s.value))
      ok = ok && add_spelling(spelling, true);
  }

  for (redactor_spec& r : redactors) {
    if (!valid_name(r.name)) {
      errors.push_back(core::str_cat("redactor name '", r.name, "' is not a plain token"));
      continue;
    }
    auto re = std::make_unique<RE2>(r.pattern, options);
    if (!re->ok()) {
      errors.push_back(core::str_cat("redactor '", r.name, "': invalid pattern: ", re->error()));
      continue;
    }
    if (RE2::FullMatch("", *re)) {
      errors.push_back(core::str_cat("redactor '", r.name, "': pattern matches the empty string"));
      continue;
    }
    std::string replacement =
        r.replacement.empty() ? core::str_cat("[REDACTED:", r.name, "]") : r.replacement;
    const std::uint32_t l = label_for(r.name, std::move(replacement));
    const bool windowed = r.max_length == 0 || r.max_length > overlap;
    const bool group = re->NumberOfCapturingGroups() > 0;
    im->redactors.push_back({std::move(re), l, r.validator, windowed ? 0 : r.max_length, windowed,
                             group, false, false, std::move(r.hint)});
    patterns.push_back(std::move(r.pattern));
  }

  if (errors.empty() && opts.prefilter) {
    std::vector<prefilter::pattern> hinted;
    for (const compiled_redactor& c : im->redactors)
      hinted.push_back({&c.hint, c.max_length});
    im->pre = std::make_unique<prefilter>(hinted);
    for (std::size_t i = 0; i < im->redactors.size(); ++i)
      im->redactors[i].prefiltered = im->pre->serves(i);
  }
  // A literal secret the prefilter does not serve is matched by its RE2 like any pattern.
  for (compiled_redactor& c : im->redactors)
    c.literal = c.literal && c.prefiltered;

  if (errors.empty()) {
    RE2::Options set_options = options;
    set_options.set_max_mem(opts.set_max_mem);
    auto set = std::make_unique<RE2::Set>(set_options, RE2::UNANCHORED);
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      if (im->redactors[i].prefiltered) continue;
      if (set->Add(patterns[i], nullptr) != static_cast<int>(im->set_patterns.size())) {
        errors.push_back(core::str_cat("redactor '", im->labels[im->redactors[i].label].name,
                                       "' cannot be added to the set"));
        break;
      }
      im->set_patterns.push_back(static_cast<std::uint32_t>(i));
    }
    if (errors.empty() && !im->set_patterns.empty()) {
      if (set->Compile())
        im->set = std::move(set);
      else
        errors.push_back("the redactors are too many or too large to compile together");
    }
  }

  if (!errors.empty()) return {nullptr, std::move(errors)};
  im->overlap = overlap;
  im->anchored = std::any_of(patterns.begin(), patterns.end(), has_anchor);
  std::vector<std::string_view> spellings;
  for_each_secret_spelling(*im, [&](std::string_view s) { spellings.push_back(s); });
  im->secret_starts = std::make_unique<secret_automaton>(spellings);
  return {std::shared_ptr<const engine>(new engine(std::move(im))), {}};
}

std::size_t engine::label_count() const noexcept {
  return impl_->labels.size();
}

std::string_view engine::label_name(std::size_t i) const noexcept {
  return i < impl_->labels.size() ? std::string_view(impl_->labels[i].name) : std::string_view();
}

std::vector<std::pair<std::string_view, std::uint64_t>> engine::named(const hit_counts& h) const {
  std::vector<std::pair<std::string_view, std::uint64_t>> out;
  for (std::size_t i = 0; i < h.size() && i < impl_->labels.size(); ++i)
    if (h[i] != 0) out.emplace_back(impl_->labels[i].name, h[i]);
  return out;
}

std::size_t engine::overlap() const noexcept {
  return impl_->overlap;
}

std::size_t engine::pattern_count() const noexcept {
  return impl_->redactors.size();
}

bool engine::joinable() const noexcept {
  return !impl_->anchored;
}

bool engine::may_match(std::string_view text) const {
  const impl& im = *impl_;
  if (im.set) {
    RE2::Set::ErrorInfo info{};
    if (im.set->Match(re2::StringPiece(text.data(), text.size()), nullptr, &info)) return true;
    if (info.kind != RE2::Set::kNoError) return true;  // DFA out of memory: cannot rule out
  }
  if (im.pre && !im.pre->empty()) {
    // One scratch per thread: a text is a header value or a URL part, scanned many times a
    // second; the windows themselves are not used, only whether there are any.
    // Left empty after each use, so one loop both answers and clears.
    thread_local std::vector<std::vector<window>> windows;
    if (windows.size() < im.redactors.size()) windows.resize(im.redactors.size());
    im.pre->scan(text, 0, windows);
    bool any = false;
    for (auto& w : windows) {
      any = any || !w.empty();
      w.clear();
    }
    if (any) return true;
  }
  return false;
}

std::string engine::redact(std::string_view text, hit_counts* hits) const {
  if (!may_match(text)) {
    if (hits != nullptr) hits->resize(label_count());
    return std::string(text);
  }
  stream s(*this);
  std::string out;
  out.reserve(text.size());
  s.write(text, out);
  s.finish(out);
  if (hits != nullptr) {
    hits->resize(label_count());
    for (std::size_t i = 0; i < s.hits().size(); ++i)
      (*hits)[i] += s.hits()[i];
  }
  return out;
}

std::string redact_header_value(const engine& e, std::string_view value, hit_counts* hits) {
  return e.redact(value, hits);
}

std::vector<std::string> redact_header_values(const engine& e,
                                              const std::vector<std::string_view>& values,
                                              hit_counts* hits) {
  std::vector<std::string> result;
  result.reserve(values.size());
  stream s(e, stream_options{framing::lines, 0});
  std::string out;
  for (std::string_view v : values) {
    s.write(v, out);
    s.write("\n", out);
  }
  s.finish(out);
  std::string_view rest = out;
  while (!rest.empty() && result.size() <= values.size()) {
    const std::size_t nl = rest.find('\n');
    result.emplace_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  }
  if (result.size() != values.size()) {
    // A replacement (or a match) that spans a line feed: redact the values one by one.
    result.clear();
    for (std::string_view v : values)
      result.push_back(e.redact(v, hits));
    return result;
  }
  if (hits != nullptr) {
    hits->resize(e.label_count());
    for (std::size_t i = 0; i < s.hits().size(); ++i)
      (*hits)[i] += s.hits()[i];
  }
  return result;
}

}  // namespace airlock::filters::redaction
