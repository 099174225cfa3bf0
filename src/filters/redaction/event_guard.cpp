// A value split across server-sent events (event_guard.hpp).
#include "filters/redaction/event_guard.hpp"

#include "filters/redaction/event_text.hpp"

namespace airlock::filters::redaction {
namespace {

// Where the first whole event in `text` ends (after its blank line: "\n\n", "\r\n\r\n" or
// "\r\r"; WHATWG HTML 9.2.6), or npos.
std::size_t event_end(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\n' && c != '\r') continue;
    std::size_t next = i + 1;
    if (c == '\r' && next < text.size() && text[next] == '\n') ++next;
    if (next >= text.size()) return std::string_view::npos;
    const char d = text[next];
    if (d == '\n') return next + 1;
    if (d == '\r') {
      if (next + 1 < text.size() && text[next + 1] == '\n') return next + 2;
      if (next + 1 < text.size()) return next + 1;
      return std::string_view::npos;  // "\r" then "\r": a CRLF may still come
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool event_guard::read(std::string_view ev, bool& starts_secret) {
  std::string data;
  if (frame_ == framing::lines) {
    while (!ev.empty() && (ev.back() == '\n' || ev.back() == '\r'))
      ev.remove_suffix(1);
    data.assign(ev);
  } else if (!event_data(ev, data)) {
    starts_secret = starting_ > 0;
    return true;
  }
  bool spans = false, overflow = false;
  for_each_event_string(data, [&](std::string_view path, std::string_view text) {
    // Only fields that end with the start of a spelling are kept: any other is where a new
    // one is (state 0).
    const auto at = fields_.find(path);
    secret_automaton::state st = at == fields_.end() ? 0 : at->second;
    const bool held_before = starts_.depth(st) >= kMinStart;
    // The event itself was redacted: a spelling that ends in the joined text spans events.
    spans = starts_.feed(st, text) || spans;
    const bool held_now = starts_.depth(st) >= kMinStart;
    if (held_now != held_before) starting_ = held_now ? starting_ + 1 : starting_ - 1;
    if (at != fields_.end()) {
      if (starts_.depth(st) == 0)
        fields_.erase(at);
      else
        at->second = st;
    } else if (starts_.depth(st) > 0) {
      if (fields_.size() < kMaxFields)
        fields_.emplace(std::string(path), st);
      else
        overflow = true;
    }
  });
  if (overflow) {
    why_ = "more than 256 fields of an event stream ending with the start of a secret";
    return false;
  }
  starts_secret = starting_ > 0;
  return !spans;
}

bool event_guard::event(std::string_view ev, std::string& out) {
  bool starts_secret = false;
  if (!read(ev, starts_secret)) {
    why_ = "a value split across server-sent events";
    held_.clear();
    return false;
  }
  held_.append(ev);
  if (starts_secret) {
    if (held_.size() <= kMaxHeld) return true;
    why_ = "server-sent events held back past 64 KiB (the start of a secret, never ended)";
    held_.clear();
    return false;
  }
  out.append(held_);
  held_.clear();
  return true;
}

bool event_guard::write(std::string_view redacted, std::string& out) {
  if (why_) return false;
  if (starts_.empty()) {  // no literal secret: nothing to hold
    out.append(redacted);
    return true;
  }
  pending_.append(redacted);
  std::size_t used = 0;
  for (;;) {
    const std::string_view rest = std::string_view(pending_).substr(used);
    const auto nl = rest.find('\n');
    const auto end =
        frame_ == framing::lines ? (nl == std::string_view::npos ? nl : nl + 1) : event_end(rest);
    if (end == std::string_view::npos) break;
    if (!event(std::string_view(pending_).substr(used, end), out)) return false;
    used += end;
  }
  pending_.erase(0, used);
  // An event is read whole: one that goes on past kMaxEvent ends the body (passed on unread,
  // it could finish a secret that an earlier event started, or start one).
  if (pending_.size() > kMaxEvent) {
    why_ = "an event of an event stream longer than 8 MiB, which the guard does not read";
    held_.clear();
    return false;
  }
  return true;
}

bool event_guard::finish(std::string& out) {
  if (why_) return false;
  bool starts_secret = false;
  if (!pending_.empty() && !read(pending_, starts_secret)) {
    why_ = "a value split across server-sent events";
    return false;
  }
  out.append(held_);
  out.append(pending_);
  held_.clear();
  pending_.clear();
  return true;
}

}  // namespace airlock::filters::redaction
