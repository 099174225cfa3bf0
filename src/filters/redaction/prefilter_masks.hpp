#pragma once
// Internal to the prefilter: what it learns about 64 bytes at a time, one bit per byte (anchor
// bytes, digits, separators, capitals, base58), with SSE2 16 bytes per compare where the CPU
// has it and byte by byte otherwise.

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace airlock::filters::redaction::prefilter_detail {

// One compare per anchor byte per 16 bytes; beyond this many the pass would cost more than
// the RE2::Set it replaces.
inline constexpr std::size_t kMaxAnchors = 16;

inline bool is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Without hardware popcnt in the baseline x86-64 ISA, GCC would call libgcc; this inlines.
inline std::size_t popcount(std::uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<std::size_t>((x * 0x0101010101010101ULL) >> 56);
}

struct masks {
  std::uint64_t anchor = 0;
  std::uint64_t digit = 0;
  std::uint64_t card_sep = 0;   // ' ' or '-'
  std::uint64_t phone_sep = 0;  // ' ', '.' or '-'
  std::uint64_t caps = 0;       // 'A'..'Z' (only when letters are asked for)
  std::uint64_t base58 = 0;     // [1-9A-HJ-NP-Za-km-z] (likewise)
};

#if defined(__SSE2__)
struct vectors {
  __m128i anchor[kMaxAnchors];
  std::size_t anchors;
  bool letters;  // compute caps and base58
};

// The masks of 64 bytes at p (fewer than 64 available: the rest reads as zero bytes).
inline masks compute(const unsigned char* p, std::size_t avail, const vectors& vs) {
  alignas(16) unsigned char tmp[64];
  const unsigned char* src = p;
  if (avail < 64) {
    std::memset(tmp, 0, sizeof tmp);
    std::memcpy(tmp, p, avail);
    src = tmp;
  }
  masks m;
  const __m128i lo = _mm_set1_epi8('0' - 1), hi = _mm_set1_epi8('9' + 1);
  const __m128i space = _mm_set1_epi8(' '), dash = _mm_set1_epi8('-'), dot = _mm_set1_epi8('.');
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * k));
    __m128i acc = _mm_setzero_si128();
    for (std::size_t a = 0; a < vs.anchors; ++a)
      acc = _mm_or_si128(acc, _mm_cmpeq_epi8(v, vs.anchor[a]));
    // Bytes >= 0x80 are negative as signed chars, so they fall outside '0'..'9'.
    const __m128i d = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
    const __m128i cs = _mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, dash));
    const __m128i ps = _mm_or_si128(cs, _mm_cmpeq_epi8(v, dot));
    const int shift = 16 * k;
    if (vs.letters) {
      const __m128i up = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                                       _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
      const __m128i low = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8('z' + 1)));
      // Base58 leaves out 0, O, I and l, which look alike.
      const __m128i left_out = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('0')),
                                                         _mm_cmpeq_epi8(v, _mm_set1_epi8('O'))),
                                            _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('I')),
                                                         _mm_cmpeq_epi8(v, _mm_set1_epi8('l'))));
      const __m128i b58 = _mm_andnot_si128(left_out, _mm_or_si128(_mm_or_si128(d, up), low));
      m.caps |= std::uint64_t(unsigned(_mm_movemask_epi8(up))) << shift;
      m.base58 |= std::uint64_t(unsigned(_mm_movemask_epi8(b58))) << shift;
    }
    m.anchor |= std::uint64_t(unsigned(_mm_movemask_epi8(acc))) << shift;
    m.digit |= std::uint64_t(unsigned(_mm_movemask_epi8(d))) << shift;
    m.card_sep |= std::uint64_t(unsigned(_mm_movemask_epi8(cs))) << shift;
    m.phone_sep |= std::uint64_t(unsigned(_mm_movemask_epi8(ps))) << shift;
  }
  if (avail < 64) {
    const std::uint64_t keep = avail == 0 ? 0 : (~std::uint64_t{0} >> (64 - avail));
    m.anchor &= keep;
    m.digit &= keep;
    m.card_sep &= keep;
    m.phone_sep &= keep;
    m.caps &= keep;
    m.base58 &= keep;
  }
  return m;
}
#else
struct vectors {
  bool anchor[256];
  bool letters;
};

inline bool is_base58(unsigned char c) {
  const bool alnum = (c >= '0' && c <= '9') || is_alpha(c);
  return alnum && c != '0' && c != 'O' && c != 'I' && c != 'l';
}

inline masks compute(const unsigned char* p, std::size_t avail, const vectors& vs) {
  masks m;
  const std::size_t n = avail < 64 ? avail : 64;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = p[i];
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (vs.anchor[c]) m.anchor |= bit;
    if (c >= '0' && c <= '9') m.digit |= bit;
    if (c == ' ' || c == '-') m.card_sep |= bit;
    if (c == ' ' || c == '-' || c == '.') m.phone_sep |= bit;
    if (vs.letters && c >= 'A' && c <= 'Z') m.caps |= bit;
    if (vs.letters && is_base58(c)) m.base58 |= bit;
  }
  return m;
}
#endif

}  // namespace airlock::filters::redaction::prefilter_detail
