#pragma once
// How the event guard (event_guard.hpp) follows a stream's strings across events: each string
// is added to the joined texts a client may make of it, and each joined text is followed
// through the secrets' spellings (secret_automaton.hpp) without being kept. The joins: the
// strings at one JSON field path (an array's elements together), per element and numbered
// choice (with and without the event's type, and with a choice numbered "0" apart from 0 as
// Python keys them), every string of the stream in order, and the
// last string of each event (a client that shows a model's reasoning, then its answer); each also
// decoded once more, through percent-encoding and HTML references (field_escapes.hpp: a client that
// decodes the text it joined); and the keys of the stream's objects, all in order (a client that
// joins the names of fields; one join, not one per path: a stream's usual keys between the parts
// end any other).
//
// Only joins whose text ends with the start of a spelling (or an incomplete escape) are kept;
// any other is where a new one is (state 0). A decoded join is kept only while it differs from
// its join as written: without escapes both read alike, and the usual string costs one walk
// of the automaton whatever the number of joins.
//
// @par Thread Safety
// One per response, one thread at a time; the automaton must outlive it.

#include "filters/redaction/secret_automaton.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace airlock::filters::redaction {

// Where a string is (event_text.hpp's event_string_fn).
struct string_paths {
  std::string_view path, indexed, typed;
};

// Where one joined text is in the secrets' spellings.
struct joined_reading {
  secret_automaton::state st = 0;
  std::string tail;       // (decoded joins) an escape the last string left incomplete
  bool released = false;  // the start it ends with was let through (release_starts)
};

class field_readings {
 public:
  static constexpr std::size_t kMinStart = 4;
  static constexpr std::size_t kMaxJoins = 512;   // per kind (as written, decoded)
  static constexpr std::size_t kMaxKey = 256;     // a join's key (its path), as kept
  static constexpr std::size_t kMaxReleased = 8;  // release_starts

  explicit field_readings(const secret_automaton& starts) : starts_(starts) {}

  // A string of an event (event_text.hpp's paths) under the event's type.
  void read_string(const string_paths& at, std::string_view type, std::string_view text);
  // The event's strings were all read: its last one is read once more, into the join of the
  // events' last strings (a model API puts its text last, after the envelope's id and model,
  // so its reasoning and then its answer, in different fields, are one text there).
  void end_event();
  // A key of an object.
  void read_key(std::string_view key);

  // A spelling ended in a joined text (so spanning strings, each redacted whole).
  bool spans() const noexcept { return spans_; }
  // More joins to keep than the bounds allow: fail closed.
  bool overflow() const noexcept { return overflow_; }
  // Some join ends with kMinStart bytes or more of a spelling: the event is held.
  bool starting() const noexcept { return starting_ > 0; }
  // The events held behind the starts grew too many: when each start is short (kMaxReleased
  // bytes at most, and a quarter of the shortest spelling it starts at most: a vendor prefix
  // such as "sk-proj-", not the secret's own bytes), they are let through and starting() is
  // false until a join reads on from one (a start that then grows is held again). False, and
  // nothing changed, when some start is longer.
  bool release_starts();

 private:
  using reading = joined_reading;
  using readings = std::map<std::string, reading, std::less<>>;
  using stepped = std::pair<reading, bool>;  // after, and whether a spelling ended

  // How a join's strings are read: as written; decoded as the client that decodes the joined
  // text does (an escape split between strings carried as the tail); or each string decoded
  // on its own (an escape a string ends in complete there).
  enum class decoding : std::uint8_t { none, joined, apart };
  stepped step(const reading& from, std::string_view text, decoding how);
  // The string at `key` in the decoded joins `in` (`plain_kept`: the join as written before
  // it, if kept; `plain_after`: after it).
  void join_decoded(readings& in, decoding how, std::optional<stepped>& start, std::string_view key,
                    std::string_view text, bool escapes, const reading* plain_kept,
                    const stepped& plain_after);
  // True when the string changes no join (nothing pending, and it starts no spelling); else
  // the reading from the start is kept for join().
  bool starts_nothing(std::string_view text, bool escapes);
  // A join's key: its kind, the event type and the path, cut one byte past kMaxKey (a key that
  // long is never kept: settle() cuts rather than let two paths share a join), so that
  // building one costs that much at most, whatever the origin's keys and types.
  // (Built in `key`, kept from string to string: no allocation for each.)
  static std::string_view join_key(std::string& key, char kind, std::string_view type,
                                   std::string_view path);
  // One join of the string being read, as written and decoded.
  void join(std::string_view key, std::string_view text, bool escapes);
  // The first string under a choice numbered as a string ("0"): from here on, the joins per
  // choice are also kept with "0" apart from 0 (kind 't'). Until now those read as the joins
  // without the event's type (kind 'j'), so they start as copies of them; a stream that never
  // numbers a choice so costs no join more.
  void split_typed_joins();
  // Whether a join holds the events: it ends with kMinStart bytes of a spelling or more, not
  // let through before.
  bool holds(const reading& r) const noexcept {
    return !r.released && starts_.depth(r.st) >= kMinStart;
  }
  // `r` kept at `key` (`at`: where it was) when `keep`, else forgotten.
  void settle(readings& in, readings::iterator at, std::string_view key, const reading& r,
              bool keep);

  const secret_automaton& starts_;
  readings plain_;    // joins as written
  readings decoded_;  // joins decoded, where they differ from plain_
  readings apart_;    // joins of strings each decoded alone, where they differ
  reading keys_;      // every key of the stream joined in order
  std::size_t starting_ = 0;
  bool spans_ = false;
  bool overflow_ = false;
  // The string being read, from the start (a join not kept): the same for every such join.
  std::optional<stepped> plain_start_, decoded_start_, apart_start_;
  std::string scratch_;  // decoded text
  std::string key_;      // the join key being read
  std::string last_;     // the event's last string so far, when it changed a join
  bool last_changes_nothing_ = false;
  bool in_event_ = false;     // a string of the event was read
  bool typed_apart_ = false;  // a choice was numbered as a string (split_typed_joins)
};

}  // namespace airlock::filters::redaction
