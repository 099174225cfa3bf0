#pragma once
// Server-sent events (WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event
// stream") read incrementally, as MCP's streamable HTTP sends a server's answers on a POST
// (Content-Type: text/event-stream). Pieces of any size go in; each complete event comes out
// with its raw text (to pass on unchanged) and its data (the `data:` lines joined with "\n").
// Bounded: an event longer than the limit is an error, the stream is then not read further.
//
// @par Thread Safety
// One reader per stream, used by one thread.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace airlock::filters::mcp {

struct sse_event {
  std::string_view raw;   // the event's lines as received, with its terminating blank line
  std::string_view data;  // the data lines' values joined with '\n' (empty when none)
  std::string_view id;    // the last `id:` value (empty when none)
  std::string_view type;  // the last `event:` value (empty: "message")
};

class sse_reader {
 public:
  explicit sse_reader(std::size_t max_event) : max_(max_event) {}

  // Reads `piece`; calls `on_event` for each event it completes, in order. False when an
  // event exceeds the limit (nothing more is read).
  bool feed(std::string_view piece, const std::function<void(const sse_event&)>& on_event);
  // The stream ended: what is left (an event without its blank line) is returned as is, for
  // the caller to pass on; it is not an event (the spec discards it).
  std::string_view rest() const noexcept { return buffer_; }

 private:
  bool take_event(std::size_t end, const std::function<void(const sse_event&)>& on_event);

  std::size_t max_;
  std::string buffer_;  // bytes of the event being read
  std::string data_;
  std::size_t scanned_ = 0;  // buffer_ before this holds no event end
  bool skip_lf_ = false;     // the last piece ended in a CR
  bool failed_ = false;
};

}  // namespace airlock::filters::mcp
