// A secret behind escapes (escape_guard.hpp).
#include "filters/redaction/escape_guard.hpp"

#include "core/ascii.hpp"

#include <algorithm>
#include <cstring>

namespace airlock::filters::redaction {

escape_guard::escape_guard(const engine& e)
    : starts_(e.secret_starts()),
      reach_(std::max<std::size_t>(starts_.longest(), 1)),
      layers_{escape_layer(starts_, reach_), escape_layer(starts_, reach_)} {}

bool escape_guard::fail() {
  why_ = layers_[0].too_long() || layers_[1].too_long()
             ? "a character reference or escape of more digits than the guard reads"
             : "a secret in the body behind JSON escapes, HTML character references, "
               "percent-encoding or line breaks";
  return false;
}

bool escape_guard::skim(std::string_view text, std::uint64_t at) {
  // From the start (state 0), only the last `reach_` bytes can hold a spelling's start.
  const std::size_t skip = text.size() > reach_ ? text.size() - reach_ : 0;
  for (std::size_t i = skip; i < text.size(); ++i)
    if (!layers_[0].read_plain(static_cast<unsigned char>(text[i]), at + i, &layers_[1]))
      return fail();
  return true;
}

std::uint64_t escape_guard::find_escape(char c, std::uint64_t from, std::uint64_t end) const {
  const bool line_break = c == '\n' || c == '\r';
  while (from < end) {
    const std::string_view rest = std::string_view(pending_).substr(from - pending_at_);
    const void* hit = std::memchr(rest.data(), c, rest.size());
    if (!hit) return end;
    const std::uint64_t at =
        from + static_cast<std::uint64_t>(static_cast<const char*>(hit) - rest.data());
    const unsigned char before = at > pending_at_
                                     ? static_cast<unsigned char>(pending_[at - pending_at_ - 1])
                                     : released_last_;
    if (!line_break || core::is_base64_byte(static_cast<char>(before))) return at;
    from = at + 1;
  }
  return end;
}

std::uint64_t escape_guard::hold_from() const noexcept {
  const std::uint64_t end = pending_at_ + pending_.size();
  return std::min(layers_[0].hold_from(end), layers_[1].hold_from(end));
}

bool escape_guard::write(std::string_view redacted, std::string& out) {
  if (why_) return false;
  if (starts_.empty()) {  // no literal secret: nothing to look for
    out.append(redacted);
    return true;
  }
  pending_.append(redacted);
  const std::uint64_t end = pending_at_ + pending_.size();
  std::uint64_t pos = std::max(scanned_, pending_at_);
  // Where each escape character comes next (absolute offsets, `end` for none), looked for again
  // only once passed: a body of many escapes ("\n\n\n...") is not searched to its end for
  // each of them. A line break counts only where it may wrap encoded text (escape_layer.hpp):
  // elsewhere the layers read it as written, and the text before it need not be read.
  constexpr char kEscapes[] = {'\\', '&', '%', '\n', '\r'};
  constexpr int kKinds = sizeof kEscapes;
  std::uint64_t next_at[kKinds] = {};
  while (pos < end) {
    const std::string_view rest = std::string_view(pending_).substr(pos - pending_at_);
    if (layers_[0].idle() && layers_[1].idle()) {
      // Nothing pending: on to the next escape, reading only where a spelling could start.
      std::uint64_t next = end;
      for (int i = 0; i < kKinds; ++i) {
        if (next_at[i] < pos) next_at[i] = find_escape(kEscapes[i], pos, end);
        next = std::min(next, next_at[i]);
      }
      const std::size_t n = static_cast<std::size_t>(next - pos);
      layers_[0].restart();
      layers_[1].restart();
      if (!skim(rest.substr(0, n), pos)) return false;
      pos += n;
      if (n == rest.size()) break;
    }
    if (!layers_[0].take(static_cast<unsigned char>(pending_[pos - pending_at_]), pos, &layers_[1]))
      return fail();
    ++pos;
  }
  scanned_ = end;
  const std::uint64_t keep = hold_from();
  if (keep > pending_at_)
    released_last_ = static_cast<unsigned char>(pending_[keep - pending_at_ - 1]);
  out.append(pending_, 0, keep - pending_at_);
  pending_.erase(0, keep - pending_at_);
  pending_at_ = keep;
  return true;
}

void escape_guard::finish(std::string& out) {
  if (why_) return;
  out.append(pending_);
  pending_at_ += pending_.size();
  pending_.clear();
}

}  // namespace airlock::filters::redaction
