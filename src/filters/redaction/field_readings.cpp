// A stream's strings followed through the secrets' spellings (field_readings.hpp).
#include "filters/redaction/field_readings.hpp"

#include "filters/redaction/field_escapes.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {

field_readings::stepped field_readings::step(const reading& from, std::string_view text,
                                             decoding how) {
  stepped after{from, false};
  std::string_view what = text;
  if (how == decoding::joined && (!from.tail.empty() || has_field_escapes(text))) {
    decode_field_escapes(from.tail, text, scratch_, after.first.tail);
    what = scratch_;
  } else if (how == decoding::apart && has_field_escapes(text)) {
    // Each string decoded on its own: an escape it ends in is complete, or read as written.
    std::string tail, ended;
    decode_field_escapes({}, text, scratch_, tail);
    scratch_.append(decode_tail_as_ended(tail, ended) ? std::string_view(ended) : tail);
    what = scratch_;
  }
  after.second = starts_.feed(after.first.st, what);
  if (after.first.st != from.st) after.first.released = false;
  // A reference the string ended in is complete for a client that decodes each string.
  if (how == decoding::joined && !after.first.tail.empty() &&
      decode_tail_as_ended(after.first.tail, scratch_)) {
    auto ended = after.first.st;
    after.second = starts_.feed(ended, scratch_) || after.second;
  }
  return after;
}

void field_readings::settle(readings& in, readings::iterator at, std::string_view key,
                            const reading& r, bool keep) {
  const bool held_before = at != in.end() && holds(at->second);
  if (at == in.end() && keep && (in.size() >= kMaxJoins || key.size() > kMaxKey)) {
    overflow_ = true;  // (what is kept is bounded: cut rather than forget)
    return;
  }
  const bool held_now = keep && holds(r);
  if (held_now != held_before) starting_ = held_now ? starting_ + 1 : starting_ - 1;
  if (at == in.end()) {
    if (keep) in.emplace(std::string(key), r);
  } else if (keep) {
    at->second = r;
  } else {
    in.erase(at);
  }
}

void field_readings::join(std::string_view key, std::string_view text, bool escapes) {
  const auto p = plain_.find(key);
  const reading* plain_kept = p != plain_.end() ? &p->second : nullptr;
  stepped after;
  if (plain_kept) {
    after = step(*plain_kept, text, decoding::none);
  } else {
    if (!plain_start_) plain_start_ = step(reading{}, text, decoding::none);
    after = *plain_start_;
  }
  spans_ = after.second || spans_;
  join_decoded(decoded_, decoding::joined, decoded_start_, key, text, escapes, plain_kept, after);
  join_decoded(apart_, decoding::apart, apart_start_, key, text, escapes, plain_kept, after);
  settle(plain_, p, key, after.first, starts_.depth(after.first.st) > 0);
}

void field_readings::join_decoded(readings& in, decoding how, std::optional<stepped>& start,
                                  std::string_view key, std::string_view text, bool escapes,
                                  const reading* plain_kept, const stepped& plain_after) {
  // Where none is kept, the decoded join reads as the join as written did so far.
  const auto d = in.empty() ? in.end() : in.find(key);
  if (d == in.end() && !escapes) return;
  stepped decoded;
  if (d != in.end()) {
    decoded = step(d->second, text, how);
  } else if (plain_kept) {
    decoded = step(*plain_kept, text, how);
  } else {
    if (!start) start = step(reading{}, text, how);
    decoded = *start;
  }
  spans_ = decoded.second || spans_;
  const bool same = decoded.first.st == plain_after.first.st && decoded.first.tail.empty();
  settle(in, d, key, decoded.first, !same);
}

bool field_readings::starts_nothing(std::string_view text, bool escapes) {
  plain_start_.reset();
  decoded_start_.reset();
  apart_start_.reset();
  if (!plain_.empty() || !decoded_.empty() || !apart_.empty()) return false;
  // Nothing pending (the usual case): a string that neither holds nor starts a spelling, as
  // written or decoded, leaves every join at the start, and needs no key.
  auto nothing = [&](const stepped& s) {
    return !s.second && starts_.depth(s.first.st) == 0 && s.first.tail.empty();
  };
  plain_start_ = step(reading{}, text, decoding::none);
  if (!nothing(*plain_start_)) return false;
  if (!escapes) return true;
  decoded_start_ = step(reading{}, text, decoding::joined);
  apart_start_ = step(reading{}, text, decoding::apart);
  return nothing(*decoded_start_) && nothing(*apart_start_);
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

void field_readings::read_string(const string_paths& at, std::string_view type,
                                 std::string_view text) {
  if (!typed_apart_ && at.typed != at.indexed) split_typed_joins();
  const bool escapes = has_field_escapes(text);
  in_event_ = true;
  // (A string that changes no join changes none as the event's last either: not kept.)
  last_changes_nothing_ = starts_nothing(text, escapes);
  if (last_changes_nothing_) return;
  last_.assign(text);
  join(join_key(key_, 's', {}, at.path), text, escapes);
  join(join_key(key_, 'i', type, at.indexed), text, escapes);
  join(join_key(key_, 'j', {}, at.indexed), text, escapes);
  if (typed_apart_) join(join_key(key_, 't', {}, at.typed), text, escapes);
  join("g", text, escapes);
}

void field_readings::split_typed_joins() {
  typed_apart_ = true;
  for (auto* in : {&plain_, &decoded_, &apart_}) {
    std::vector<std::pair<std::string, reading>> typed;
    for (const auto& [key, r] : *in) {
      if (key.starts_with('j')) typed.emplace_back("t" + key.substr(1), r);
    }
    for (const auto& [key, r] : typed)
      settle(*in, in->end(), key, r, true);
  }
}

void field_readings::end_event() {
  if (!std::exchange(in_event_, false) || last_changes_nothing_) return;
  const bool escapes = has_field_escapes(last_);
  if (starts_nothing(last_, escapes)) return;
  join("l", last_, escapes);
}

void field_readings::read_key(std::string_view key) {
  const bool held_before = holds(keys_);
  const auto before = keys_.st;
  spans_ = starts_.feed(keys_.st, key) || spans_;
  if (keys_.st != before) keys_.released = false;
  const bool held_now = holds(keys_);
  if (held_now != held_before) starting_ = held_now ? starting_ + 1 : starting_ - 1;
}

bool field_readings::release_starts() {
  auto releasable = [&](const reading& r) {
    const std::size_t depth = starts_.depth(r.st);
    return !holds(r) || (depth <= kMaxReleased && depth * 4 <= starts_.shortest(r.st));
  };
  for (const auto* in : {&plain_, &decoded_, &apart_}) {
    for (const auto& [key, r] : *in)
      if (!releasable(r)) return false;
  }
  if (!releasable(keys_)) return false;
  for (auto* in : {&plain_, &decoded_, &apart_}) {
    for (auto& [key, r] : *in)
      r.released = r.released || holds(r);
  }
  keys_.released = keys_.released || holds(keys_);
  starting_ = 0;
  return true;
}

}  // namespace airlock::filters::redaction
