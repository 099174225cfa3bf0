#include "filters/dlp/scanner.hpp"

#include "core/str_cat.hpp"
#include "filters/dlp/decode.hpp"
#include "filters/dlp/escapes.hpp"
#include "filters/dlp/seed_phrase.hpp"
#include "filters/dlp/token_runs.hpp"
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/decoder.hpp"

#include <algorithm>
#include <cmath>

namespace airlock::filters::dlp {
namespace {

using detail::kMaxToken;
using detail::kMinToken;

constexpr int kMaxDepth = 2;  // decoded text is read again this many levels deep
constexpr int kMaxPercentRounds = 6;

bool all_of(std::string_view s, bool (*pred)(unsigned char)) {
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

// File signatures of the binary content that rides in base64 legitimately (data: URIs, uploads):
// PNG, JPEG, GIF, PDF, gzip, zip, WebP/RIFF. Such a token is not judged for its entropy (an
// image is as random as a key), but what it decodes to is still read: four bytes of "GIF8" in
// front of a secret must not hide it.
bool binary_magic(std::string_view d) {
  for (std::string_view m :
       {std::string_view("\x89PNG", 4), std::string_view("\xFF\xD8\xFF", 3),
        std::string_view("GIF8"), std::string_view("%PDF"), std::string_view("\x1F\x8B", 2),
        std::string_view("PK\x03\x04", 4), std::string_view("RIFF")})
    if (d.starts_with(m)) return true;
  return false;
}

constexpr std::size_t kMaxInflated = 256 * 1024;     // of one gzip stream
constexpr std::size_t kInflateBudget = 1024 * 1024;  // of all of one scan()'s

// Whether `s` starts as a gzip stream (RFC 1952: 1F 8B) or a zlib one (RFC 1950: deflate's
// method 8 in the low bits of CMF, and CMF FLG a multiple of 31; Python's zlib.compress,
// `openssl zlib`, git objects).
redaction::content_coding compressed_as(std::string_view s) {
  if (s.starts_with("\x1F\x8B")) return redaction::content_coding::gzip;
  if (s.size() >= 2) {
    const auto cmf = static_cast<unsigned char>(s[0]), flg = static_cast<unsigned char>(s[1]);
    if ((cmf & 0x0F) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0)
      return redaction::content_coding::deflate;
  }
  return redaction::content_coding::identity;
}

// The start of a gzip or zlib stream (`tar cz ~/.ssh | base64`, `gzip -c creds | base64`)
// inflated, at most `max` bytes of it (a bomb costs no more); what comes before corrupt or cut
// data.
std::string inflate_some(std::string_view compressed, redaction::content_coding coding,
                         std::size_t max) {
  redaction::decoder d(coding);
  std::string out;
  if (max > 0) (void)d.decode(compressed, out, max);
  return out;
}

}  // namespace

void add_finding(findings& out, std::string_view cls, std::string_view location) {
  const finding f{cls, location};
  if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
}

std::vector<std::string> scanner::default_classes() {
  std::vector<std::string> out;
  for (std::string_view n : redaction::builtin_names())
    if (n != "email" && n != "phone") out.emplace_back(n);
  out.emplace_back(kSeedPhrase);
  return out;
}

scanner::build_result scanner::build(const scanner_config& config) {
  build_result out;
  auto s = std::make_shared<scanner>();
  std::vector<std::string> names = config.classes.empty() ? default_classes() : config.classes;
  std::vector<std::string> engine_names;
  for (const auto& n : names) {
    if (n == kSeedPhrase)
      s->seed_ = true;
    else if (n == kHighEntropy)
      s->entropy_ = true;
    else if (n != kNestedEncoding)
      engine_names.push_back(n);
  }
  s->entropy_ = s->entropy_ || config.entropy;
  auto resolved = redaction::resolve_redactors(engine_names, config.custom);
  for (auto& e : resolved.errors)
    out.errors.push_back(core::str_cat("dlp: ", e));
  if (!out.errors.empty()) return out;
  auto built = redaction::engine::build(std::move(resolved.specs), config.secrets);
  for (auto& e : built.errors)
    out.errors.push_back(core::str_cat("dlp: ", e));
  if (!out.errors.empty()) return out;
  s->engine_ = std::move(built.compiled);
  for (const auto& p : config.placeholders)
    if (!p.empty()) s->placeholders_.push_back(p);
  out.built = std::move(s);
  return out;
}

void scanner::scan(std::string_view text, kind how, std::string_view location,
                   findings& out) const {
  scan(text, how, location, out, false);
}

void scanner::scan_all(const std::vector<piece>& pieces, findings& out) const {
  bool quiet = false;
  if (pieces.size() > 1 && engine_->joinable()) {
    std::string joined;
    for (const piece& p : pieces) {
      joined.append(p.text);
      joined.push_back('\n');
    }
    quiet = !engine_->may_match(joined);
  }
  // scan() takes `quiet` only for a piece it reads as given: one with a placeholder is read
  // blanked out, which the joined look did not see, and gets a look of its own.
  for (const piece& p : pieces)
    scan(p.text, p.how, p.location, out, quiet);
}

void scanner::scan(std::string_view text, kind how, std::string_view location, findings& out,
                   bool engine_quiet) const {
  // Each placeholder blanked to one space. (Built anew rather than replaced in place: GCC 12
  // at -O2 takes an in-place replace() for an overlapping copy, -Wrestrict.)
  std::string cleaned;
  for (const auto& p : placeholders_) {
    auto at = text.find(p);
    if (at == std::string_view::npos) continue;
    std::string next;
    next.reserve(text.size());
    std::size_t from = 0;
    for (; at != std::string_view::npos; at = text.find(p, from)) {
      next.append(text.substr(from, at - from));
      next.push_back(' ');
      from = at + p.size();
    }
    next.append(text.substr(from));
    cleaned = std::move(next);
    text = cleaned;
  }
  reading r{location, out, kInflateBudget};
  read(text, 0, r, engine_quiet && cleaned.empty());
  // JSON's escapes and HTML's character references, as the receiving end undoes them
  // ("\u0041KIA...", base64 with "\/" for '/', "&#65;KIA..."). (A "\n" between base64 lines
  // is a gap the token runs know.)
  read_unescaped(text, [&](std::string_view unescaped) {
    read(unescaped, 0, r);
    return false;  // read both
  });
  // Text in UTF-16 or UTF-32, and a MIME part in quoted-printable (a multipart body), as the
  // receiving end reads them.
  if (auto narrow = without_nuls(text)) read(*narrow, 0, r);
  if (text.find('=') != std::string_view::npos)
    if (auto qp = quoted_printable_decode(text)) read(*qp, 0, r);
  // Nothing to decode: no '%', and no '+' where a query spells a space so.
  if (text.find('%') == std::string_view::npos &&
      (how != kind::url || text.find('+') == std::string_view::npos))
    return;
  // Percent-encoding, layer by layer (a form body, a URL, a cookie value).
  std::string layer(text);
  int rounds = 0;
  for (; rounds < kMaxPercentRounds; ++rounds) {
    std::string next = percent_decode(layer, how == kind::url);
    if (next == layer) break;
    layer = std::move(next);
    read(layer, 0, r);
  }
  // Three layers or more: nobody encodes a value that often but to hide it.
  if (rounds >= 3) add_finding(out, kNestedEncoding, location);
}

void scanner::scan_query(std::string_view query, findings& out) const {
  std::string joined;
  std::size_t params = 0;
  for (std::size_t pos = 0; pos <= query.size();) {
    auto amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    const auto param = query.substr(pos, amp - pos);
    const auto eq = param.find('=');
    if (eq != std::string_view::npos) {
      joined += percent_decode(param.substr(eq + 1), true);
      ++params;
    }
    pos = amp + 1;
  }
  // The classes only: decoding or judging the entropy of a concatenation would find what no
  // single value holds ("png" + a base64 image).
  if (params < 2) return;
  redaction::hit_counts hits;
  (void)engine_->redact(joined, &hits);
  for (std::size_t i = 0; i < hits.size(); ++i)
    if (hits[i] != 0) add_finding(out, engine_->label_name(i), "query");
}

void scanner::read(std::string_view text, int depth, reading& r, bool engine_quiet) const {
  // redact() would look first too, but then copy the text it did not change.
  if (!engine_quiet && engine_->may_match(text)) {
    redaction::hit_counts hits;
    (void)engine_->redact(text, &hits);
    for (std::size_t i = 0; i < hits.size(); ++i)
      if (hits[i] != 0) add_finding(r.out, engine_->label_name(i), r.location);
  }
  if (seed_ && has_seed_phrase(text)) add_finding(r.out, kSeedPhrase, r.location);
  if (auto folded = fold_confusables(text)) read(*folded, depth, r);
  if (depth < kMaxDepth) {
    read_tokens(text, depth, r);
    if (auto dumped = hexdump_decode(text)) read_decoded(*dumped, depth, r);
  }
}

void scanner::read_tokens(std::string_view text, int depth, reading& r) const {
  detail::run_joiner hex_run(detail::run_joiner::kind::hex);
  detail::run_joiner base64_run(detail::run_joiner::kind::base64_lines);
  auto read_hex = [&](const std::string& joined) {
    if (auto decoded = hex_decode(joined)) read_decoded(*decoded, depth, r);
  };
  auto read_base64 = [&](const std::string& joined) {
    if (auto decoded = base64_decode(joined)) read_decoded(*decoded, depth, r);
  };
  detail::token_span t;
  for (std::size_t i = 0; detail::next_token(text, i, t); i = t.padded) {
    hex_run.offer(text, t, read_hex);
    base64_run.offer(text, t, read_base64);
    const std::string_view token = text.substr(t.begin, t.padded - t.begin);
    if (token.size() < kMinToken || token.size() > kMaxToken) continue;
    // Without the '=' after it: hex has no padding, and one '=' too many must not hide it.
    const auto bare = text.substr(t.begin, t.end - t.begin);
    std::optional<std::string> decoded;
    if (t.hex || (bare.size() > 2 && (bare[2] == '-' || bare[2] == ':')))  // "41-4b", "41:4B"
      decoded = hex_decode(bare);
    if (!decoded) {
      auto upper = [](unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7'); };
      auto lower = [](unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'); };
      if (all_of(bare, upper) || all_of(bare, lower)) decoded = base32_decode(token);
      if (!decoded || printable_share(*decoded) < 0.9) decoded = base64_decode(token);
    }
    const bool binary = decoded && binary_magic(*decoded);  // an image or an archive
    if (entropy_ && !binary && entropic(token)) add_finding(r.out, kHighEntropy, r.location);
    if (decoded) read_decoded(*decoded, depth, r);
  }
  hex_run.finish(read_hex);
  base64_run.finish(read_base64);
}

void scanner::read_decoded(std::string_view decoded, int depth, reading& r, bool inflate) const {
  if (decoded.empty()) return;
  // What gzip or zlib inflates to is read (once: no gzip in gzip), and the bytes as they are
  // too: a signature in front of plain text is no compressed stream.
  if (const auto coding = compressed_as(decoded);
      inflate && coding != redaction::content_coding::identity) {
    const std::string inflated =
        inflate_some(decoded, coding, std::min(kMaxInflated, r.inflate_left));
    r.inflate_left -= inflated.size();
    read_decoded(inflated, depth, r, false);
  }
  if (printable_share(decoded) >= 0.9)
    read(decoded, depth + 1, r);
  else if (std::string runs = printable_runs(decoded); !runs.empty())
    read(runs, depth + 1, r);
}

// A token that looks random: long, upper and lower case letters and digits mixed, and close
// to the entropy of random text of its length. Hex (git SHAs, ETags), UUIDs, words and
// numbers do not mix all three.
bool scanner::entropic(std::string_view token) const {
  auto check = [](std::string_view t) {
    if (t.size() < 20 || t.size() > 512) return false;
    bool upper = false, lower = false, digit = false;
    for (char c : t) {
      upper = upper || (c >= 'A' && c <= 'Z');
      lower = lower || (c >= 'a' && c <= 'z');
      digit = digit || (c >= '0' && c <= '9');
    }
    if (!(upper && lower && digit)) return false;
    const double bound = std::min(4.5, 0.84 * std::log2(static_cast<double>(t.size())));
    return shannon_entropy(t) >= bound;
  };
  if (check(token)) return true;
  // The segments of a path ("/api/x7Kp.../status").
  for (std::size_t pos = 0; pos < token.size();) {
    auto slash = token.find('/', pos);
    if (slash == std::string_view::npos) slash = token.size();
    if (slash - pos != token.size() && check(token.substr(pos, slash - pos))) return true;
    pos = slash + 1;
  }
  return false;
}

}  // namespace airlock::filters::dlp
