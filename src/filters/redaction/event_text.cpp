#include "filters/redaction/event_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {
namespace {

// Bounds on what an origin's event stream can make the reader hold besides its text: a path is
// cut to kMaxPath bytes, and past kMaxStreams paths the rest share the last stream.
constexpr std::size_t kMaxPath = 256;
constexpr std::size_t kMaxStreams = 256;

// Every string of `v`, each under its path, to `f`.
void walk(const boost::json::value& v, std::string& path, const event_string_fn& f) {
  const std::size_t keep = path.size();
  if (v.is_string()) {
    f(path, v.get_string());
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.get_object()) {
      path.append(".").append(key.substr(0, kMaxPath));
      walk(child, path, f);
      path.resize(keep);
    }
  } else if (v.is_array()) {
    path.append("[]");
    for (const auto& element : v.get_array())
      walk(element, path, f);
    path.resize(keep);
  }
}

// Text streams by JSON field path, in order of first appearance.
class streams {
 public:
  void add(std::string_view path, std::string_view text) {
    path = path.substr(0, kMaxPath);
    auto at = index_.find(path);
    if (at == index_.end()) {
      if (by_path_.size() == kMaxStreams) {
        by_path_.back().append(text);
        return;
      }
      at = index_.emplace(std::string(path), by_path_.size()).first;
      by_path_.emplace_back();
    }
    by_path_[at->second].append(text);
  }

  std::vector<std::string> take() && { return std::move(by_path_); }

 private:
  // path -> its stream in by_path_ (transparent: looked up by string_view)
  struct hash : std::hash<std::string_view> {
    using is_transparent = void;
  };
  std::unordered_map<std::string, std::size_t, hash, std::equal_to<>> index_;
  std::vector<std::string> by_path_;
};

// One line of an event stream, taken from the front of `body` (lines end at CRLF, LF or CR:
// the specification allows all three).
std::string_view next_line(std::string_view& body) {
  // (A loop, not find_first_of: libstdc++'s calls memchr on the two endings for each byte.)
  std::size_t end = 0;
  while (end < body.size() && body[end] != '\n' && body[end] != '\r')
    ++end;
  if (end == body.size()) end = std::string_view::npos;
  const std::string_view line = body.substr(0, end);
  std::size_t next = end == std::string_view::npos ? body.size() : end + 1;
  if (end != std::string_view::npos && body[end] == '\r' && next < body.size() &&
      body[next] == '\n')
    ++next;
  body.remove_prefix(next);
  return line;
}

// A "data" line's value appended to `data` (after a line feed when it has some already);
// false for a line of another field ("database", "event", a comment).
bool take_data_line(std::string_view line, std::string& data, bool& has_data) {
  if (!line.starts_with("data")) return false;
  std::string_view value = line.substr(4);
  if (!value.empty() && value.front() != ':') return false;
  if (!value.empty()) value.remove_prefix(1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data) data.push_back('\n');
  data.append(value);
  has_data = true;
  return true;
}

}  // namespace

void for_each_event_string(std::string_view data, const event_string_fn& f) {
  if (data.empty()) return;
  boost::system::error_code ec;
  const auto v = boost::json::parse(data, ec);
  std::string path;
  if (!ec && (v.is_object() || v.is_array())) {
    walk(v, path, f);
  } else {
    f(path, data);
    f(path, "\n");  // one event's text is not glued to the next one's
  }
}

bool event_data(std::string_view event, std::string& data) {
  data.clear();
  bool has_data = false;
  while (!event.empty()) {
    take_data_line(next_line(event), data, has_data);
  }
  return has_data;
}

std::vector<std::string> event_stream_texts(std::string_view body) {
  streams found;
  auto add = [&](std::string_view path, std::string_view text) { found.add(path, text); };
  std::string data;
  bool has_data = false;
  while (!body.empty()) {
    const auto line = next_line(body);
    if (line.empty()) {  // the event ends
      if (has_data) for_each_event_string(data, add);
      data.clear();
      has_data = false;
    } else {
      take_data_line(line, data, has_data);
    }
  }
  if (has_data) for_each_event_string(data, add);  // cut short: what came is read too
  return std::move(found).take();
}

}  // namespace airlock::filters::redaction
