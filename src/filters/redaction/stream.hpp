#pragma once
// Redaction of one response body, chunk by chunk, without holding the body.
//
// The stream holds back only a bounded tail: text a match could still start in (the overlap
// plus a few bytes of context). Everything before it is decided and written out as soon as it
// arrives. The output does not depend on how the body was split: the concatenation of what
// write()/finish() produce equals engine::redact(body) for every chunking (the tests check
// every split). In event mode (text/event-stream, NDJSON), each event is also redacted as a
// text of its own and written out as soon as its delimiter arrives, without waiting for more.
//
// Usage:
//   stream s(engine_ptr);              // or {engine_ptr, {.frame = framing::events}}
//   for each chunk: s.write(chunk, out); send(out); out.clear();
//   s.finish(out); send(out);          // then s.hits() for the audit record
//
// @par Thread Safety
// One stream per response, used by one thread at a time. The engine it reads is shared.

#include "filters/redaction/engine.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction {

struct window;  // prefilter.hpp

enum class framing {
  none,    // one text: the body
  events,  // server-sent events: an event ends at a blank line ("\n\n" or "\r\n\r\n"),
           // WHATWG HTML "9.2.6 Interpreting an event stream"
  lines,   // newline-delimited records (NDJSON, JSON Lines): a record ends at "\n"
};

struct stream_options {
  framing frame = framing::none;
  // Scan once this many new bytes wait (0: the engine's overlap). Lower reacts sooner to a
  // trickle; higher rescans the held tail less often. Complete events never wait for it.
  std::size_t min_scan = 0;
};

class stream {
 public:
  // Keeps the engine alive for the stream's lifetime.
  explicit stream(std::shared_ptr<const engine> e, stream_options opts = {});
  // Borrows the engine: it must outlive the stream.
  explicit stream(const engine& e, stream_options opts = {});
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  // Takes the next chunk of the body and appends to `out` the redacted text that is decided.
  void write(std::string_view chunk, std::string& out);
  // The body is complete: appends the rest. write() must not be called afterwards.
  void finish(std::string& out);

  // Input bytes held back right now, and the most it can ever be between calls.
  std::size_t retained() const noexcept { return buf_.size(); }
  std::size_t retention_bound() const noexcept;

  // Hits so far, indexed like engine::label_name(); e.named(s.hits()) gives names.
  const hit_counts& hits() const noexcept { return hits_; }
  std::uint64_t redactions() const noexcept { return redactions_; }
  std::uint64_t bytes_in() const noexcept { return bytes_in_; }
  std::uint64_t bytes_out() const noexcept { return bytes_out_; }
  // Times the RE2::Set ran out of memory and every pattern was run instead (slower, still
  // correct). Worth a metric if it is ever non-zero.
  std::uint64_t set_fallbacks() const noexcept { return set_fallbacks_; }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();  // no position
  struct slot {                // one per compiled pattern
    std::size_t from = 0;      // next anchor to search from (absolute); kNone when done
    std::size_t a = 0, b = 0;  // accepted span not yet consumed, when cached
    bool cached = false;
    bool set_hit = true;
  };

  void process(std::size_t view_end, bool final_text, std::string& out);
  void search(std::size_t i, std::size_t view_end, std::size_t det_end, bool final_text);
  std::size_t cell() const noexcept;
  std::size_t decided_end(bool windowed, std::size_t view_end, bool final_text) const;
  void emit_text(std::size_t from, std::size_t to, std::string& out);
  void start_segment(std::size_t at);
  std::size_t next_delimiter();
  void compact();

  std::shared_ptr<const engine> keep_;
  const engine& engine_;
  const engine::impl& im_;
  stream_options opts_;
  std::size_t min_scan_;

  std::string buf_;  // input [buf_off_, buf_off_ + buf_.size())
  std::size_t buf_off_ = 0;
  std::size_t seg_begin_ = 0;   // start of the current text (the body, or the current event)
  std::size_t cut_ = 0;         // input before this is written out or replaced
  std::size_t scanned_ = 0;     // input end at the last scan
  std::size_t delim_from_ = 0;  // where to look for the next event delimiter
  bool finished_ = false;

  std::vector<slot> slots_;
  std::vector<int> set_matches_;
  std::vector<std::vector<window>> windows_;  // per prefiltered slot, this scan's windows
  std::vector<std::size_t> win_pos_;          // per slot: first window not yet passed
  hit_counts hits_;
  std::uint64_t redactions_ = 0;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
  std::uint64_t set_fallbacks_ = 0;
};

}  // namespace airlock::filters::redaction
