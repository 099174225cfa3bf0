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
    return true;
  }
  bool spans = false;
  for_each_event_string(data, [&](std::string_view path, std::string_view text) {
    auto at = fields_.find(path);
    if (at == fields_.end()) {
      if (fields_.size() >= kMaxFields) return;  // (bounded: a later field is not joined)
      at = fields_.emplace(std::string(path), std::string()).first;
    }
    std::string& joined = at->second;
    joined.append(text);
    // The event itself was redacted: a secret found now in the joined text spans events.
    if (engine_.may_match(joined)) {
      hit_counts hits;
      engine_.redact(joined, &hits);
      for (std::size_t i = 0; i < hits.size(); ++i)
        spans = spans || (hits[i] > 0 && engine_.label_name(i).starts_with("secret:"));
    }
    if (joined.size() > kTail) joined.erase(0, joined.size() - kTail);
  });
  for (const auto& [path, joined] : fields_)
    starts_secret = starts_secret || engine_.ends_in_secret_start(joined, kMinStart);
  return !spans;
}

bool event_guard::event(std::string_view ev, std::string& out) {
  bool starts_secret = false;
  if (ev.size() <= kMaxEvent && !read(ev, starts_secret)) {
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
  // An event that never ends is not held whole: past kMaxEvent it goes on unread, or, behind
  // events held back, ends the body.
  if (pending_.size() > kMaxEvent) {
    if (!held_.empty()) {
      why_ = "server-sent events held back past 64 KiB (the start of a secret, never ended)";
      held_.clear();
      return false;
    }
    out.append(pending_);
    pending_.clear();
  }
  return true;
}

bool event_guard::finish(std::string& out) {
  if (why_) return false;
  bool starts_secret = false;
  if (!pending_.empty() && pending_.size() <= kMaxEvent && !read(pending_, starts_secret)) {
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
