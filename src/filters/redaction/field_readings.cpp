// A stream's strings followed through the secrets' spellings (field_readings.hpp).
#include "filters/redaction/field_readings.hpp"

#include "filters/redaction/field_escapes.hpp"

#include <algorithm>
#include <utility>

namespace airlock::filters::redaction {

field_readings::stepped field_readings::step(const reading& from, std::string_view text,
                                             bool decode) {
  stepped after{from, false};
  std::string_view what = text;
  if (decode && (!from.tail.empty() || has_field_escapes(text))) {
    decode_field_escapes(from.tail, text, scratch_, after.first.tail);
    what = scratch_;
  }
  after.second = starts_.feed(after.first.st, what);
  // A reference the string ended in is complete for a client that decodes each string.
  if (decode && !after.first.tail.empty() && decode_tail_as_ended(after.first.tail, scratch_)) {
    auto ended = after.first.st;
    after.second = starts_.feed(ended, scratch_) || after.second;
  }
  return after;
}

void field_readings::settle(readings& in, readings::iterator at, std::string_view key,
                            const reading& r, bool keep) {
  const bool held_before = at != in.end() && starts_.depth(at->second.st) >= kMinStart;
  const bool held_now = keep && starts_.depth(r.st) >= kMinStart;
  if (held_now != held_before) starting_ = held_now ? starting_ + 1 : starting_ - 1;
  if (at != in.end()) {
    if (keep)
      at->second = r;
    else
      in.erase(at);
  } else if (keep) {
    if (in.size() < kMaxJoins && key.size() <= kMaxKey)
      in.emplace(std::string(key), r);
    else
      overflow_ = true;  // (what is kept is bounded: cut rather than forget)
  }
}

void field_readings::join(std::string_view key, std::string_view text, bool escapes) {
  const auto p = plain_.find(key);
  const bool plain_kept = p != plain_.end();
  stepped after;
  if (plain_kept) {
    after = step(p->second, text, false);
  } else {
    if (!plain_start_) plain_start_ = step(reading{}, text, false);
    after = *plain_start_;
  }
  spans_ = after.second || spans_;
  // The decoded join: where none is kept it reads as the join as written did so far.
  const auto d = decoded_.empty() ? decoded_.end() : decoded_.find(key);
  if (d != decoded_.end() || escapes) {
    stepped decoded;
    if (d != decoded_.end()) {
      decoded = step(d->second, text, true);
    } else if (plain_kept) {
      decoded = step(p->second, text, true);
    } else {
      if (!decoded_start_) decoded_start_ = step(reading{}, text, true);
      decoded = *decoded_start_;
    }
    spans_ = decoded.second || spans_;
    const bool same = decoded.first.st == after.first.st && decoded.first.tail.empty();
    settle(decoded_, d, key, decoded.first, !same);
  }
  settle(plain_, p, key, after.first, starts_.depth(after.first.st) > 0);
}

bool field_readings::starts_nothing(std::string_view text, bool escapes) {
  plain_start_.reset();
  decoded_start_.reset();
  if (!plain_.empty() || !decoded_.empty()) return false;
  // Nothing pending (the usual case): a string that neither holds nor starts a spelling, as
  // written or decoded, leaves every join at the start, and needs no key.
  plain_start_ = step(reading{}, text, false);
  if (escapes) decoded_start_ = step(reading{}, text, true);
  auto nothing = [&](const stepped& s) {
    return !s.second && starts_.depth(s.first.st) == 0 && s.first.tail.empty();
  };
  return nothing(*plain_start_) && (!decoded_start_ || nothing(*decoded_start_));
}

std::string_view field_readings::join_key(std::string& key, char kind, std::string_view type,
                                          std::string_view path) {
  key.assign(1, kind);
  const auto add = [&](std::string_view part) {
    key.append(part.substr(0, kMaxKey + 1 - std::min(key.size(), kMaxKey + 1)));
  };
  add(type);
  if (!type.empty()) add("\n");
  add(path);
  return key;
}

void field_readings::read_string(std::string_view path, std::string_view indexed,
                                 std::string_view type, std::string_view text) {
  const bool escapes = has_field_escapes(text);
  in_event_ = true;
  // (A string that changes no join changes none as the event's last either: not kept.)
  last_changes_nothing_ = starts_nothing(text, escapes);
  if (last_changes_nothing_) return;
  last_.assign(text);
  join(join_key(key_, 's', {}, path), text, escapes);
  join(join_key(key_, 'i', type, indexed), text, escapes);
  join(join_key(key_, 'j', {}, indexed), text, escapes);
  join("g", text, escapes);
}

void field_readings::end_event() {
  if (!std::exchange(in_event_, false) || last_changes_nothing_) return;
  const bool escapes = has_field_escapes(last_);
  if (starts_nothing(last_, escapes)) return;
  join("l", last_, escapes);
}

void field_readings::read_key(std::string_view key) {
  const bool held_before = starts_.depth(keys_) >= kMinStart;
  spans_ = starts_.feed(keys_, key) || spans_;
  const bool held_now = starts_.depth(keys_) >= kMinStart;
  if (held_now != held_before) starting_ = held_now ? starting_ + 1 : starting_ - 1;
}

}  // namespace airlock::filters::redaction
