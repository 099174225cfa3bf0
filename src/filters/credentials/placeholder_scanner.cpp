#include "filters/credentials/placeholder_scanner.hpp"

#include <algorithm>

namespace airlock::filters::credentials {

placeholder_scanner::placeholder_scanner(std::span<const policy::compiled_secret> secrets,
                                         const net::normalized_host& host)
    : secrets_(secrets) {
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    const auto& s = secrets[i];
    if (s.placeholder.empty() || s.bound_to(host)) continue;
    watched_.push_back(i);
    keep_ = std::max(keep_, s.placeholder.size() - 1);
  }
}

std::size_t placeholder_scanner::scan(std::string_view piece) {
  if (watched_.empty() || piece.empty()) return none;
  // A placeholder across the boundary lies in the held tail plus the piece's first keep_
  // bytes; one inside the piece is found in the piece itself (no copy of the whole piece).
  joined_.assign(tail_);
  joined_.append(piece.substr(0, std::min(piece.size(), keep_)));
  for (std::size_t i : watched_) {
    const std::string_view p = secrets_[i].placeholder;
    if (joined_.find(p) != std::string::npos || piece.find(p) != std::string_view::npos) return i;
  }
  if (piece.size() >= keep_) {
    tail_.assign(piece.substr(piece.size() - keep_));
  } else {
    joined_.assign(tail_);
    joined_.append(piece);
    tail_.assign(
        std::string_view(joined_).substr(joined_.size() - std::min(joined_.size(), keep_)));
  }
  return none;
}

}  // namespace airlock::filters::credentials
