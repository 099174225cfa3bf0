#pragma once
// What a client reads out of a server-sent event stream (WHATWG HTML, section 9.2 "Server-sent
// events": an event ends at a blank line, and its "data:" lines, joined by line feeds, are its
// data). A model API streams its answer a few words per event, as JSON deltas
// ({"choices":[{"delta":{"content":" ignore"}}]}, {"delta":{"text":" all"}}), so a phrase is
// never whole in the bytes: the reader joins, for each JSON field path (an array's elements
// share one), the strings it holds across events, in order, and the data of events that are not
// JSON. Paths are cut to 256 bytes and there are at most 256 streams (the rest share the last),
// so what it holds beside the text is bounded whatever the origin sends. Each such stream is read
// on its own (a phrase's context is its own stream's, not the text of another field).
//
// @par Thread Safety
// A pure function.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction {

// A string of an event's JSON with where it is: its field path with every array element under
// "[]"; the same path with each element's place and an object's numeric "index" member, an
// index 0, 0.0 or "0" read alike (JavaScript's property names); the same again with "0" apart
// from 0 and 0.0 (a Python dict's keys); and the text.
using event_string_fn = std::function<void(std::string_view path, std::string_view indexed_path,
                                           std::string_view typed_path, std::string_view text)>;

// An object's key with the path of the object it is in ("" at the top).
using event_key_fn = std::function<void(std::string_view path, std::string_view key)>;

// One event's type: its last "event" field (WHATWG HTML 9.2.6), "message" when none or empty.
std::string_view event_type(std::string_view event);
// One event's data (the values of its "data" lines joined by line feeds) into `data`; false
// when it has none.
bool event_data(std::string_view event, std::string& data);
// Each string of one event's data (JSON as lenient as the clients' parsers), with its paths,
// to `f`; data that is not a JSON object, array or string is one text under the empty path, a
// line feed after it. False when the data looks like JSON (an object or array) that does not
// parse: a client's parser may read what this one does not. With `keys`, each object's keys
// go to it too, in order, before the strings under them.
bool for_each_event_string(std::string_view data, const event_string_fn& f,
                           const event_key_fn* keys = nullptr);

// At most this many streams: past it, the rest share the last.
inline constexpr std::size_t kMaxEventStreams = 256;

// The streams of text in `body` (an event stream, possibly cut short), in order of first
// appearance; none when it has no event data.
std::vector<std::string> event_stream_texts(std::string_view body);

// Every text a client may join from `body`: event_stream_texts's streams (per field path),
// then those per element and numbered choice under the event's type (interleaved choices read
// apart), those per choice with "0" apart from 0 (typed_path), then all the strings in order (a
// model's reasoning, then its answer); each text once (a join that reads the same as an earlier one
// is left out).
std::vector<std::string> event_stream_readings(std::string_view body);

}  // namespace airlock::filters::redaction
