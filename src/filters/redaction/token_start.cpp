#include "filters/redaction/token_start.hpp"

namespace airlock::filters::redaction {

bool may_start_token(std::string_view text, std::size_t i) noexcept {
  if (i == 0 || !is_token_byte(static_cast<unsigned char>(text[i - 1]))) return true;
  for (std::size_t k = 2; k <= 6 && k <= i; ++k)
    if (text[i - k] == '\\') return true;
  return false;
}

bool match_at_token_starts(const RE2& re, std::string_view text, std::size_t from, std::size_t to,
                           re2::StringPiece* sub, int nsub) {
  for (std::size_t i = from; i < to; ++i)
    if (may_start_token(text, i) &&
        re.Match(re2::StringPiece(text.data(), text.size()), i, to, RE2::ANCHOR_START, sub, nsub))
      return true;
  return false;
}

}  // namespace airlock::filters::redaction
