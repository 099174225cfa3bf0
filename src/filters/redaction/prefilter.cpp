#include "filters/redaction/prefilter.hpp"

#include "filters/redaction/prefilter_masks.hpp"
#include "filters/redaction/token_start.hpp"

#include <algorithm>
#include <cstring>

namespace airlock::filters::redaction {
namespace {

using namespace prefilter_detail;

// What a new anchor byte costs, in the unit of byte_cost (expected hits per 1000 bytes).
constexpr double kNewAnchorCost = 6;
// Window of a phone group hit: the match starts at most this far before the separator.
constexpr std::size_t kPhoneBefore = 12;
constexpr std::size_t kPhoneAfter = 5;  // the separator and 4 digits
constexpr std::size_t kCardDigits = 13;
// A token may start this many bytes into a base58 run: after "\u0041" the run holds "u0041"
// (JSON escapes, validators::token_starts_at).
constexpr std::size_t kEscapeBefore = 5;

// Rough frequency of a byte in JSON and English text, per 1000 bytes: anchors are chosen
// among the rarest bytes of each literal, since each occurrence costs a verification.
double byte_cost(unsigned char c) {
  static constexpr double kLower[26] = {60, 12, 25, 30, 90, 18, 15, 35, 55, 1.5, 6, 30, 20,
                                        55, 55, 15, 1,  50, 50, 65, 22, 8,  15,  2, 15, 1};
  if (c >= 'a' && c <= 'z') return kLower[c - 'a'];
  if (c >= 'A' && c <= 'Z') return (c == 'J' || c == 'Q' || c == 'X' || c == 'Z') ? 1 : 3;
  if (c >= '0' && c <= '9') return 20;
  switch (c) {
    case ' ':
      return 150;
    case '"':
      return 40;
    case ':':
    case ',':
      return 15;
    case '.':
      return 10;
    case '-':
      return 20;  // dates, UUIDs
    case '_':
      return 15;  // JSON keys
    case '/':
      return 6;
    case '{':
    case '}':
    case '\n':
      return 5;
    case '[':
    case ']':
      return 3;
    case '=':
    case '\\':
      return 2;
    case '@':
    case '+':
      return 0.5;
    case '\0':
      return 300;  // binary data's commonest byte, and every other byte of UTF-16 text
    default:
      return 1;
  }
}

unsigned char other_case(unsigned char c) {
  return static_cast<unsigned char>(c ^ 0x20);
}

bool equal_icase(const unsigned char* a, std::string_view b) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    unsigned char x = a[i], y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;
    if (!is_alpha(x) || !is_alpha(y) || (x | 0x20) != (y | 0x20)) return false;
  }
  return true;
}

std::uint32_t load_head(const unsigned char* p, std::size_t n) {
  unsigned char b[4] = {0, 0, 0, 0};
  std::memcpy(b, p, n < 4 ? n : 4);
  return std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 |
         std::uint32_t(b[3]) << 24;
}

}  // namespace

prefilter::prefilter(const std::vector<pattern>& patterns) : served_(patterns.size(), false) {
  // Late hints (redactor.hpp) after all the others: they take the anchors left, or share.
  for (const bool late : {false, true})
    serve(patterns, late);
}

void prefilter::serve(const std::vector<pattern>& patterns, bool late) {
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const prefilter_hint* h = patterns[i].hint;
    if (h == nullptr || h->empty() || h->late != late) continue;
    const bool windowed = patterns[i].max_length == 0;
    if (windowed) {
      // Hits must mark where a match starts: only literals at the match start (and the
      // capitals and digits an IBAN starts with) will do.
      if (h->card_digits || h->phone_digits || h->base58_min != 0) continue;
      if (std::any_of(h->literals.begin(), h->literals.end(),
                      [](const literal_hint& l) { return l.max_before != 0; }))
        continue;
    }
    const std::size_t lits_before = lits_.size(), anchors_before = anchors_.size();
    bool ok = true;
    for (const literal_hint& l : h->literals)
      ok = ok && add_literal(static_cast<std::uint32_t>(i), l, patterns[i].max_length);
    if (!ok) {  // roll back this pattern's literals: the set finds it instead
      for (auto& v : by_anchor_)
        while (!v.empty() && v.back() >= lits_before)
          v.pop_back();
      lits_.resize(lits_before);
      anchors_.resize(anchors_before);
      continue;
    }
    if (h->card_digits) card_.push_back(static_cast<std::uint32_t>(i));
    if (h->phone_digits) phone_.push_back(static_cast<std::uint32_t>(i));
    if (h->caps_digits)
      caps_.emplace_back(static_cast<std::uint32_t>(i), windowed ? 1 : patterns[i].max_length);
    if (h->base58_min != 0) {
      base58_.push_back({static_cast<std::uint32_t>(i), h->base58_min, h->base58_max});
      base58_min_ = base58_min_ == 0 ? h->base58_min : std::min(base58_min_, h->base58_min);
    }
    served_[i] = true;
  }
}

bool prefilter::add_literal(std::uint32_t pattern, const literal_hint& h, std::size_t max_length) {
  const std::string& t = h.text;
  if (t.empty()) return false;
  std::size_t best = t.size();
  double best_cost = 0;
  for (std::size_t off = 0; off < t.size(); ++off) {
    const auto c = static_cast<unsigned char>(t[off]);
    unsigned char bytes[2] = {c, other_case(c)};
    const std::size_t nbytes = h.icase && is_alpha(c) ? 2 : 1;
    double cost = 0;
    std::size_t fresh = 0;
    for (std::size_t k = 0; k < nbytes; ++k) {
      cost += byte_cost(bytes[k]);
      if (std::find(anchors_.begin(), anchors_.end(), bytes[k]) == anchors_.end()) ++fresh;
    }
    if (anchors_.size() + fresh > kMaxAnchors) continue;
    cost += kNewAnchorCost * double(fresh);
    if (best == t.size() || cost < best_cost) {
      best = off;
      best_cost = cost;
    }
  }
  if (best == t.size()) return false;
  const auto c = static_cast<unsigned char>(t[best]);
  const std::uint32_t index = static_cast<std::uint32_t>(lits_.size());
  for (unsigned char b : {c, other_case(c)}) {
    if (b != c && !(h.icase && is_alpha(c))) break;
    if (std::find(anchors_.begin(), anchors_.end(), b) == anchors_.end()) anchors_.push_back(b);
    by_anchor_[b].push_back(index);
    auto& follow = follow_[b];
    if (best + 1 == t.size()) {
      follow.fill(~std::uint64_t{0});
    } else {
      const auto f = static_cast<unsigned char>(t[best + 1]);
      for (unsigned char x : {f, other_case(f)}) {
        if (x != f && !(h.icase && is_alpha(f))) break;
        follow[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    }
  }
  // The first 4 bytes, compared as one word before the whole literal.
  const std::size_t n = std::min<std::size_t>(t.size(), 4);
  const std::uint32_t head = load_head(reinterpret_cast<const unsigned char*>(t.data()), n);
  std::uint32_t mask = n == 4 ? ~std::uint32_t{0} : (std::uint32_t{1} << (8 * n)) - 1;
  if (h.icase)
    for (std::size_t i = 0; i < n; ++i)
      if (is_alpha(static_cast<unsigned char>(t[i]))) mask &= ~(std::uint32_t{0x20} << (8 * i));
  lits_.push_back({pattern, t, h.icase, best, h.max_before,
                   max_length == 0 ? 1 : std::max(max_length, t.size()), head & mask, mask});
  return true;
}

void prefilter::scan(std::string_view text, std::size_t base,
                     std::vector<std::vector<window>>& out) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  vectors vs{};
  vs.letters = !caps_.empty() || !base58_.empty();
#if defined(__SSE2__)
  vs.anchors = anchors_.size();
  for (std::size_t a = 0; a < anchors_.size(); ++a)
    vs.anchor[a] = _mm_set1_epi8(static_cast<char>(anchors_[a]));
#else
  for (unsigned char a : anchors_)
    vs.anchor[a] = true;
#endif
  const bool digits = !card_.empty() || !phone_.empty();

  auto emit = [&](const std::vector<std::uint32_t>& patterns, std::size_t b, std::size_t e) {
    for (std::uint32_t i : patterns)
      out[i].push_back({b, e});
  };
  // A run of digits joined by single ' ' or '-' (absolute begin, digits so far).
  bool run_open = false;
  std::size_t run_begin = 0, run_digits = 0;
  auto close_run = [&](std::size_t end) {
    if (run_open && run_digits >= kCardDigits) emit(card_, run_begin, end);
    run_open = false;
  };
  bool prev_digit = false, prev_sep = false;  // the last byte of the previous 64
  // A base58 run reaching into the next 64 bytes (absolute begin).
  bool b58_open = false;
  std::size_t b58_begin = 0;
  // A run [b, e) holds a token a base58 pattern accepts only if the byte after it ends the
  // token and its length fits (see prefilter_hint::base58_min); a run the view cuts may go on.
  auto emit_base58 = [&](std::size_t b, std::size_t e) {
    const bool cut = e == base + n;
    if (!cut && is_token_byte(p[e - base])) return;
    for (const auto& r : base58_)
      if (e - b >= r.least && (cut || e - b <= r.most + kEscapeBefore))
        out[r.pattern].push_back({b, e});
  };

  masks next = compute(p, n, vs);
  for (std::size_t w = 0; w < n; w += 64) {
    const masks m = next;
    next = w + 64 < n ? compute(p + w + 64, n - w - 64, vs) : masks{};

    for (std::uint64_t a = m.anchor; a != 0; a &= a - 1) {
      const std::size_t pos = w + static_cast<std::size_t>(__builtin_ctzll(a));
      const unsigned char b = p[pos];
      if (pos + 1 < n) {
        const unsigned char f = p[pos + 1];
        if ((follow_[b][f >> 6] >> (f & 63) & 1) == 0) continue;
      }
      for (std::uint32_t li : by_anchor_[b]) {
        const literal& l = lits_[li];
        if (pos < l.anchor) continue;
        const std::size_t t = pos - l.anchor;
        if (t + l.text.size() > n) continue;
        if ((load_head(p + t, l.text.size()) & l.head_mask) != l.head) continue;
        const bool same = l.icase ? equal_icase(p + t, l.text)
                                  : std::memcmp(p + t, l.text.data(), l.text.size()) == 0;
        if (!same) continue;
        const std::size_t at = base + t;
        out[l.pattern].push_back({at - std::min(at, l.before), at + l.length});
      }
    }
    if (!caps_.empty()) {
      // Two capitals then two digits, bits carried in from the next 64 bytes.
      const std::uint64_t c = m.caps, d = m.digit, dn = next.digit;
      const std::uint64_t start =
          c & ((c >> 1) | (next.caps << 63)) & ((d >> 2) | (dn << 62)) & ((d >> 3) | (dn << 61));
      for (std::uint64_t g = start; g != 0; g &= g - 1) {
        const std::size_t at = base + w + static_cast<std::size_t>(__builtin_ctzll(g));
        for (const auto& [i, length] : caps_)
          out[i].push_back({at, at + length});
      }
    }
    if (!base58_.empty()) base58_runs(m.base58, base + w, b58_open, b58_begin, emit_base58);
    if (!digits) continue;

    const std::uint64_t d = m.digit, dn = next.digit;
    if (!card_.empty()) {
      // Joined: digits, and single separators with a digit on both sides.
      const std::uint64_t digit_before = (d << 1) | std::uint64_t(prev_digit);
      const std::uint64_t digit_after = (d >> 1) | (dn << 63);
      std::uint64_t r = d | (m.card_sep & digit_before & digit_after);
      if (run_open && (r & 1) == 0) close_run(base + w);
      while (r != 0) {
        const unsigned s = static_cast<unsigned>(__builtin_ctzll(r));
        const std::uint64_t rest = ~(r >> s);
        const unsigned len = rest == 0 ? 64 - s : static_cast<unsigned>(__builtin_ctzll(rest));
        const std::uint64_t run = (len >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << len) - 1))
                                  << s;
        // Digits are counted only where they may add up to a card (a run's length bounds its
        // digits), which spares most numbers the count.
        const bool may_reach = len >= kCardDigits || s == 0 || s + len >= 64;
        const std::size_t count = may_reach ? popcount(d & run) : 0;
        if (s == 0 && run_open) {
          run_digits += count;
        } else {
          run_open = true;
          run_begin = base + w + s;
          run_digits = count;
        }
        if (s + len >= 64) break;  // continues into the next 64 bytes (or ends there)
        close_run(base + w + s + len);
        r &= ~run;
      }
    }
    if (!phone_.empty()) {
      const std::uint64_t sep_before = (m.phone_sep << 1) | std::uint64_t(prev_sep);
      const std::uint64_t four =
          d & ((d >> 1) | (dn << 63)) & ((d >> 2) | (dn << 62)) & ((d >> 3) | (dn << 61));
      for (std::uint64_t g = sep_before & four; g != 0; g &= g - 1) {
        const std::size_t sep = base + w + static_cast<std::size_t>(__builtin_ctzll(g)) - 1;
        emit(phone_, sep - std::min(sep, kPhoneBefore), sep + kPhoneAfter);
      }
    }
    prev_digit = (d >> 63) != 0;
    prev_sep = (m.phone_sep >> 63) != 0;
  }
  close_run(base + n);
  if (b58_open) emit_base58(b58_begin, base + n);
}

template <class Emit>
void prefilter::base58_runs(std::uint64_t r, std::size_t at, bool& open, std::size_t& begin,
                            Emit&& emit) const {
  // The run the previous 64 bytes left open: it ends at the first byte here outside base58.
  if (open) {
    const unsigned len = ~r == 0 ? 64 : static_cast<unsigned>(__builtin_ctzll(~r));
    if (len == 64) return;
    emit(begin, at + len);
    open = false;
    r &= ~((std::uint64_t{1} << len) - 1);
  }
  // The run reaching the last byte stays open into the next 64.
  if ((r >> 63) != 0) {
    const unsigned top = ~r == 0 ? 64 : static_cast<unsigned>(__builtin_clzll(~r));
    open = true;
    begin = at + (64 - top);
    r = top == 64 ? 0 : r & ((std::uint64_t{1} << (64 - top)) - 1);
  }
  // The runs inside: most text has none as long as base58_min_ (words are short), which the
  // shifted ANDs tell without walking each run.
  std::uint64_t x = r;
  for (std::size_t k = 1; k < base58_min_ && x != 0;) {
    const std::size_t step = std::min(k, base58_min_ - k);
    x &= x >> step;
    k += step;
  }
  if (x == 0) return;
  while (r != 0) {
    const unsigned s = static_cast<unsigned>(__builtin_ctzll(r));
    const unsigned len = static_cast<unsigned>(__builtin_ctzll(~(r >> s)));  // r's top bit is 0
    emit(at + s, at + s + len);
    r &= ~(((std::uint64_t{1} << len) - 1) << s);
  }
}

}  // namespace airlock::filters::redaction
