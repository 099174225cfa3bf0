#include "filters/redaction/event_text.hpp"

#include "filters/redaction/json_relax.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {
namespace {

// Bounds on what an origin's event stream can make the reader hold besides its text: a path is
// cut to kMaxPath bytes, and past kMaxStreams paths the rest share the last stream.
constexpr std::size_t kMaxPath = 256;
constexpr std::size_t kMaxStreams = kMaxEventStreams;
// How deep an event's JSON is read: as deep as Python's json module reads (it stops at the
// interpreter's recursion limit, 1,000 frames by default); deeper data that looks like JSON is
// refused, and the guard cuts the body (a JavaScript client may read deeper still). (walk()
// recurses once per level.)
constexpr std::size_t kMaxEventJsonDepth = 1000;
// The type of an event without one (WHATWG HTML 9.2.6: "message", as a client listens for it).
constexpr std::string_view kMessage = "message";

// Where a string is: its path with every array element under "[]" (a client that joins an
// array's parts), and its path with each element's place and an object's numeric "index"
// member (a client that joins per choice or content block, as model APIs number them), the
// keys spelled so that no two paths read alike (their length first).
// The typed path is the indexed one with an index given as a string kept apart from the
// number.
struct place {
  std::string shared;
  std::string indexed;
  std::string typed;
};

// An object's numeric "index" member: its digits, and whether they came as a string. As
// JavaScript names properties, 0, 0.0 and "0" are one choice; as a Python dict keys them, 0 and
// 0.0 are one and "0" another.
struct choice_index {
  std::string digits;  // empty: none
  bool quoted = false;
};
choice_index index_of(const boost::json::object& o) {
  const auto it = o.find("index");
  if (it == o.end()) return {};
  const auto& v = it->value();
  if (v.is_int64()) return {std::to_string(v.get_int64())};
  if (v.is_uint64()) return {std::to_string(v.get_uint64())};
  if (v.is_double()) {
    const double d = v.get_double();
    if (d >= -1e15 && d <= 1e15 && d == static_cast<double>(static_cast<std::int64_t>(d)))
      return {std::to_string(static_cast<std::int64_t>(d))};
    return {};
  }
  if (v.is_string()) {
    const std::string_view digits = v.get_string();
    if (!digits.empty() && digits.size() <= 18 &&
        digits.find_first_not_of("0123456789") == std::string_view::npos &&
        (digits.size() == 1 || digits[0] != '0'))
      return {std::string(digits), true};
  }
  return {};
}

// Whether data that does not parse is JSON that a client's parser may still read (NaN, a lone
// surrogate, comments) rather than text: an object's first member or end, or an array's first
// element as a JSON value starts ("[REDACTED:...", "[INFO] ...", "[1/3] ..." and "{user}
// joined" are text).
bool looks_like_json(std::string_view data) {
  auto skip_space = [&](std::size_t at) { return data.find_first_not_of(" \t\r\n", at); };
  const auto first = skip_space(0);
  if (first == std::string_view::npos) return false;
  const char open = data[first];
  if (open != '{' && open != '[') return false;
  const auto next = skip_space(first + 1);
  if (next == std::string_view::npos) return false;
  const char c = data[next];
  if (open == '{') return c == '"' || c == '}' || c == '/';
  if (c == '{' || c == '[' || c == '"' || c == ']' || c == '/') return true;
  // A number or a literal, ended as a value is: by space, ',' or ']' (or the data's end).
  auto ends_value = [](char d) {
    return d == ' ' || d == '\t' || d == '\r' || d == '\n' || d == ',' || d == ']';
  };
  std::size_t end = next;
  while (end < data.size() && !ends_value(data[end]))
    ++end;
  const std::string_view token = data.substr(next, end - next);
  if (token == "true" || token == "false" || token == "null" || token == "NaN" ||
      token == "Infinity" || token == "-Infinity")
    return true;
  if (c != '-' && !(c >= '0' && c <= '9')) return false;
  return token.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
}

// Every string of `v`, each under its place, to `f`.
void walk(const boost::json::value& v, place& at, const event_string_fn& f,
          const event_key_fn* keys) {
  const std::size_t keep_shared = at.shared.size(), keep_indexed = at.indexed.size(),
                    keep_typed = at.typed.size();
  if (v.is_string()) {
    f(at.shared, at.indexed, at.typed, v.get_string());
  } else if (v.is_object()) {
    const auto& o = v.get_object();
    if (const auto index = index_of(o); !index.digits.empty()) {
      at.indexed.append("#").append(index.digits);
      at.typed.append(index.quoted ? "#\"" : "#").append(index.digits);
    }
    const std::size_t object_indexed = at.indexed.size(), object_typed = at.typed.size();
    for (const auto& [key, child] : o) {
      if (keys) (*keys)(at.shared, key);
      at.shared.append(".").append(key.substr(0, kMaxPath));
      for (auto* path : {&at.indexed, &at.typed}) {
        path->append(".")
            .append(std::to_string(key.size()))
            .append(":")
            .append(key.substr(0, kMaxPath));
      }
      walk(child, at, f, keys);
      at.shared.resize(keep_shared);
      at.indexed.resize(object_indexed);
      at.typed.resize(object_typed);
    }
  } else if (v.is_array()) {
    at.shared.append("[]");
    std::size_t i = 0;
    for (const auto& element : v.get_array()) {
      const std::string n = std::to_string(i++);
      at.indexed.append("[").append(n).append("]");
      at.typed.append("[").append(n).append("]");
      walk(element, at, f, keys);
      at.indexed.resize(keep_indexed);
      at.typed.resize(keep_typed);
    }
  }
  at.shared.resize(keep_shared);
  at.indexed.resize(keep_indexed);
  at.typed.resize(keep_typed);
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

// An "event" line's value into `type`; false for a line of another field.
bool take_event_line(std::string_view line, std::string_view& type) {
  if (!line.starts_with("event:")) return false;
  type = line.substr(6);
  if (type.starts_with(' ')) type.remove_prefix(1);
  return true;
}

}  // namespace

bool for_each_event_string(std::string_view data, const event_string_fn& f,
                           const event_key_fn* keys) {
  if (data.empty()) return true;
  boost::json::parse_options strict;  // what clients take: JavaScript's and Python's parsers
  strict.max_depth = kMaxEventJsonDepth;
  strict.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  auto v = boost::json::parse(data, ec, {}, strict);
  std::string relaxed;
  bool relax = false;
  if (ec && looks_like_json(data)) {
    // NaN or a lone surrogate, which clients read and Boost.JSON does not (json_relax.hpp).
    relax = relax_json(data, relaxed);
    if (relax) v = boost::json::parse(relaxed, ec, {}, strict);
  }
  bool as_text_too = false;
  if (ec && looks_like_json(data)) {
    // Comments or trailing commas: a lenient parser reads the strings, and a client that
    // does not parse JSON reads the data as text, comments and all. Both are read.
    auto lenient = strict;
    lenient.allow_comments = true;
    lenient.allow_trailing_commas = true;
    v = boost::json::parse(relax ? std::string_view(relaxed) : data, ec, {}, lenient);
    as_text_too = true;
  }
  place at;
  if (!ec && (v.is_object() || v.is_array() || v.is_string())) {
    walk(v, at, f, keys);
    if (!as_text_too) return true;
  }
  f(at.shared, at.indexed, at.typed, data);
  f(at.shared, at.indexed, at.typed, "\n");  // one event's text is not glued to the next one's
  return !ec || !looks_like_json(data);
}

std::string_view event_type(std::string_view event) {
  std::string_view type;
  while (!event.empty())
    take_event_line(next_line(event), type);
  return type.empty() ? kMessage : type;
}

bool event_data(std::string_view event, std::string& data) {
  data.clear();
  bool has_data = false;
  while (!event.empty()) {
    take_data_line(next_line(event), data, has_data);
  }
  return has_data;
}

// Each event of `body` (an event stream, possibly cut short: what came is read too): its
// type and data to `f`.
template <typename F>
void for_each_event(std::string_view body, F&& f) {
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a byte-order mark (WHATWG)
  std::string data;
  std::string_view type;
  bool has_data = false;
  while (!body.empty()) {
    const auto line = next_line(body);
    if (line.empty()) {  // the event ends
      if (has_data) f(type.empty() ? kMessage : type, data);
      data.clear();
      type = {};
      has_data = false;
    } else if (!take_data_line(line, data, has_data)) {
      take_event_line(line, type);
    }
  }
  if (has_data) f(type.empty() ? kMessage : type, data);
}

std::vector<std::string> event_stream_texts(std::string_view body) {
  streams found;
  auto add = [&](std::string_view path, std::string_view, std::string_view, std::string_view text) {
    found.add(path, text);
  };
  for_each_event(
      body, [&](std::string_view, const std::string& data) { for_each_event_string(data, add); });
  return std::move(found).take();
}

std::vector<std::string> event_stream_readings(std::string_view body) {
  streams by_path, by_index, by_typed;
  std::string in_order;
  std::string key;
  for_each_event(body, [&](std::string_view type, const std::string& data) {
    for_each_event_string(data, [&](std::string_view path, std::string_view indexed,
                                    std::string_view typed, std::string_view text) {
      by_path.add(path, text);
      // (Cut as it is built: a long type or key costs no more than kMaxPath per string.)
      key.assign(type.substr(0, kMaxPath)).push_back('\n');
      key.append(indexed.substr(0, kMaxPath + 1 - key.size()));
      by_index.add(key, text);
      by_typed.add(typed, text);
      in_order.append(text);
    });
  });
  auto out = std::move(by_path).take();
  std::unordered_set<std::string_view> seen;
  // (Views into `out` stay valid: it is reserved for every reading first.)
  auto more = std::move(by_index).take();
  auto typed = std::move(by_typed).take();
  out.reserve(out.size() + more.size() + typed.size() + 1);
  for (const auto& text : out)
    seen.insert(text);
  std::move(typed.begin(), typed.end(), std::back_inserter(more));
  more.push_back(std::move(in_order));
  for (auto& text : more) {
    if (seen.contains(text)) continue;
    out.push_back(std::move(text));
    seen.insert(out.back());
  }
  return out;
}

}  // namespace airlock::filters::redaction
