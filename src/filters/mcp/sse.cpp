#include "filters/mcp/sse.hpp"

namespace airlock::filters::mcp {

bool sse_reader::feed(std::string_view piece,
                      const std::function<void(const sse_event&)>& on_event) {
  if (failed_) return false;
  buffer_.append(piece);
  std::size_t pos = scanned_;  // where the next line not yet looked at starts
  // A CR ended the last piece: an LF starting this one belongs to it (CR LF is one line end).
  if (skip_lf_ && pos < buffer_.size()) {
    if (buffer_[pos] == '\n') ++pos;
    skip_lf_ = false;
  }
  for (;;) {
    const std::size_t end = buffer_.find_first_of("\r\n", pos);
    if (end == std::string::npos) break;
    std::size_t next = end + 1;
    if (buffer_[end] == '\r') {
      if (end + 1 == buffer_.size())
        skip_lf_ = true;  // a CR LF may be split between pieces
      else if (buffer_[end + 1] == '\n')
        next = end + 2;
    }
    const bool blank = end == pos;
    pos = next;
    if (blank) {
      if (!take_event(pos, on_event)) return false;
      pos = 0;
    }
  }
  scanned_ = pos;
  if (buffer_.size() > max_) {
    failed_ = true;
    return false;
  }
  return true;
}

bool sse_reader::take_event(std::size_t end,
                            const std::function<void(const sse_event&)>& on_event) {
  if (end > max_) {
    failed_ = true;
    return false;
  }
  const std::string_view raw(buffer_.data(), end);
  sse_event ev;
  ev.raw = raw;
  data_.clear();
  bool any_data = false;
  for (std::size_t pos = 0; pos < raw.size();) {
    std::size_t eol = raw.find_first_of("\r\n", pos);
    if (eol == std::string_view::npos) eol = raw.size();
    const std::string_view line = raw.substr(pos, eol - pos);
    pos = eol + (raw.substr(eol, 2) == "\r\n" ? 2 : 1);
    if (line.empty() || line.front() == ':') continue;  // the blank line, or a comment
    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (any_data) data_ += '\n';
      data_.append(value);
      any_data = true;
    } else if (field == "id") {
      ev.id = value;
    } else if (field == "event") {
      ev.type = value;
    }
  }
  ev.data = data_;
  on_event(ev);
  buffer_.erase(0, end);
  return true;
}

}  // namespace airlock::filters::mcp
