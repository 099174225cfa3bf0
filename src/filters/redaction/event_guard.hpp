#pragma once
// A secret split across server-sent events. The stream (stream.hpp) redacts each event as a
// text of its own, but a client joins the strings of one JSON field across events (a model
// API's answer arrives a few characters per delta: {"choices":[{"delta":{"content":"sk-li"}}]},
// then {"...":"ve-AB..."}), so a secret an origin streams in two deltas reaches it whole. The
// guard reads the redacted events as a client may (event_text.hpp: per JSON field path, per
// element and choice, and all the strings in order; each join also decoded again, and the keys)
// and follows each joined text through the secrets' spellings (field_readings.hpp):
// - an event after which a field's text ends with the start of a literal secret (kMinStart
//   bytes or more, in any spelling) is held back, with the ones after it, until a later event
//   shows the value does not go on (they are then released) or completes it;
// - a literal secret that ends in a field's joined text (so spanning events: each event was
//   redacted whole) ends the body there (write() returns false): the client gets none of it
//   from the held events, and the response is cut rather than passed whole.
// An engine without literal secrets needs no guard: the bytes pass as they come.
// Newline-delimited JSON (NDJSON, JSON Lines) is read the same way, a record for an event.
// Held events are bounded: past kMaxHeld bytes they go on when each start held is a short
// part of the secret (a vendor prefix such as "sk-proj-": field_readings::release_starts), and
// otherwise the body is cut (fail closed). So is an
// event, which is read once whole (kMaxEvent, then the body is cut: an event passed on unread
// could finish a secret an earlier event started, or start one). Values the
// redactors find (an e-mail address, a key of a known shape) split across events are not
// joined: a model streams every such value in pieces, and cutting each answer that holds one
// would be no answer; each piece is redacted where it alone matches.
//
// @par Thread Safety
// One per response, one thread at a time; the engine (and its automaton) is shared and must
// outlive the guard.

#include "filters/redaction/engine.hpp"
#include "filters/redaction/field_readings.hpp"
#include "filters/redaction/secret_automaton.hpp"
#include "filters/redaction/stream.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

class event_guard {
 public:
  static constexpr std::size_t kMinStart = field_readings::kMinStart;
  static constexpr std::size_t kMaxHeld = 64 * 1024;
  static constexpr std::size_t kMaxEvent = 8 << 20;

  // `frame`: server-sent events (an event ends at a blank line, its text is its "data" lines),
  // or lines (NDJSON, JSON Lines: a record is a line, as Ollama streams its answer).
  event_guard(const engine& e, framing frame)
      : starts_(e.secret_starts()), frame_(frame), readings_(starts_) {}

  // Redacted stream output in; appends to `out` the whole events that may go on. False when a
  // value spans events (or too much is held): nothing more may be sent.
  bool write(std::string_view redacted, std::string& out);
  // The body ended: what is held and the last, unterminated event go on (a value that never
  // completed is no secret), unless that last part completes one.
  bool finish(std::string& out);

  const char* why() const noexcept { return why_; }

 private:
  // One whole event: read, then held or released with the ones held before it.
  bool event(std::string_view ev, std::string& out);
  // Its strings added to their fields' joined texts; false when a value now spans events.
  bool read(std::string_view ev, bool& starts_secret);

  const secret_automaton& starts_;
  framing frame_;
  std::string pending_;        // output after the last whole event
  std::size_t scan_from_ = 0;  // where in pending_ the search for its end goes on
  bool first_ = true;          // the first event is still to come
  std::string held_;           // whole events held back
  field_readings readings_;    // the stream's strings, joined as clients may
  const char* why_ = nullptr;
};

}  // namespace airlock::filters::redaction
