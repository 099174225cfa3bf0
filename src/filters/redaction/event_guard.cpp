// A value split across server-sent events (event_guard.hpp).
#include "filters/redaction/event_guard.hpp"

#include "core/str_cat.hpp"
#include "filters/redaction/event_text.hpp"

#include <utility>

namespace airlock::filters::redaction {
namespace {

// Where the first whole event in `text` ends (after its blank line: "\n\n", "\r\n\r\n" or
// "\r\r"; WHATWG HTML 9.2.6), or npos.
std::size_t event_end(std::string_view text, std::size_t from) {
  for (std::size_t i = from; i < text.size(); ++i) {
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
    while (!ev.empty() && (ev.back() == '\n' || ev.back() == '\r' || ev.back() == '\x1e'))
      ev.remove_suffix(1);
    data.assign(ev);
  } else if (!event_data(ev, data)) {
    starts_secret = readings_.starting();
    return true;
  }
  const std::string_view type = frame_ == framing::events ? event_type(ev) : std::string_view();
  const event_key_fn on_key = [&](std::string_view, std::string_view key) {
    readings_.read_key(key);
  };
  const bool parsed = for_each_event_string(
      data,
      [&](std::string_view path, std::string_view indexed, std::string_view typed,
          std::string_view text) {
        if (path.empty() && text == "\n") return;  // (plain data: a client may join it as is)
        readings_.read_string({path, indexed, typed}, type, text);
      },
      &on_key);
  readings_.end_event();
  if (!parsed) {
    why_ = "an event stream's JSON that the guard cannot parse";
    return false;
  }
  if (readings_.overflow()) {
    why_ =
        "more than 512 fields of an event stream, or one at a path over 256 bytes, ending with "
        "the start of a secret";
    return false;
  }
  starts_secret = readings_.starting();
  return !readings_.spans();
}

bool event_guard::event(std::string_view ev, std::string& out) {
  bool starts_secret = false;
  if (!read(ev, starts_secret)) {
    if (why_ == nullptr) why_ = "a secret split across the events of an event stream";
    held_.clear();
    return false;
  }
  held_.append(ev);
  if (starts_secret && held_.size() <= kMaxHeld) return true;
  if (starts_secret && !readings_.release_starts()) {
    why_ =
        "server-sent events held back past 64 KiB behind the start of a secret, more of it than "
        "may go on";
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
    // (The search goes on where the last one stopped, two bytes back for a line ending that
    // came in two parts: a long event is not read again for each piece of it.)
    const std::size_t from = std::max(used, scan_from_ > 2 ? scan_from_ - 2 : 0);
    const std::string_view all = pending_;
    std::size_t end = std::string_view::npos;
    if (frame_ == framing::lines) {
      // A record ends at a line ending, LF or CR (a client that splits lines as Python's
      // str.splitlines does), or at the RS that starts the next (RFC 7464).
      std::size_t nl = from;
      while (nl < all.size() && all[nl] != '\n' && all[nl] != '\r' && all[nl] != '\x1e')
        ++nl;
      if (nl < all.size()) end = nl + 1 - used;
    } else if (const auto e = event_end(all, from); e != std::string_view::npos) {
      end = e - used;
    }
    if (end == std::string_view::npos) {
      scan_from_ = all.size();
      break;
    }
    std::string_view ev = all.substr(used, end);
    if (first_) {  // a byte-order mark before the first event is no part of it (WHATWG)
      first_ = false;
      if (ev.starts_with("\xEF\xBB\xBF")) {
        out.append(ev.substr(0, 3));  // (nothing is held yet)
        ev.remove_prefix(3);
      }
    }
    if (!event(ev, out)) return false;
    used += end;
    scan_from_ = used;
  }
  scan_from_ -= used;
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
    if (why_ == nullptr) why_ = "a secret split across the events of an event stream";
    return false;
  }
  out.append(held_);
  out.append(pending_);
  held_.clear();
  pending_.clear();
  return true;
}

}  // namespace airlock::filters::redaction
