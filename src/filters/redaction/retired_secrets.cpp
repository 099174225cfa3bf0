#include "filters/redaction/retired_secrets.hpp"

#include "policy/snapshot.hpp"

#include <algorithm>

namespace airlock::filters::redaction {

std::vector<literal_secret> retired_secrets::carry(const policy::snapshot& next,
                                                   clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto in_next = [&](const policy::secret_value& v) {
    return std::any_of(next.secrets().begin(), next.secrets().end(),
                       [&](const policy::compiled_secret& s) { return s.value.same_as(v); });
  };
  // What the last policy held and this one does not: retired now, newest first.
  std::vector<value> newly;
  for (auto& [name, bytes] : current_)
    if (!in_next(bytes)) newly.push_back({std::move(name), std::move(bytes), now});
  retired_.insert(retired_.begin(), std::make_move_iterator(newly.begin()),
                  std::make_move_iterator(newly.end()));
  current_.clear();
  for (const auto& s : next.secrets())
    current_.emplace_back(s.name, s.value);
  // Dropped: a value in force again (rotated back), one past `keep`, a copy of a newer
  // retirement, and each name's values beyond `per_secret`.
  std::vector<value> kept;
  std::vector<literal_secret> out;
  for (auto& v : retired_) {
    const bool again = in_next(v.bytes);
    const bool stale = now - v.retired > keep;
    const bool copy = std::any_of(kept.begin(), kept.end(),
                                  [&](const value& k) { return k.bytes.same_as(v.bytes); });
    const auto same_name =
        std::count_if(kept.begin(), kept.end(), [&](const value& k) { return k.name == v.name; });
    if (again || stale || copy || static_cast<std::size_t>(same_name) >= per_secret) continue;
    out.push_back({v.name, std::string(v.bytes.reveal())});
    kept.push_back(std::move(v));
  }
  retired_ = std::move(kept);
  return out;
}

}  // namespace airlock::filters::redaction
