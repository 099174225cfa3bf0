#include "filters/mcp/listing.hpp"

#include "core/str_cat.hpp"
#include "filters/dlp/injection.hpp"
#include "filters/mcp/answer_id.hpp"
#include "filters/mcp/decide.hpp"
#include "filters/validation/json_body.hpp"
#include "filters/validation/text.hpp"
#include "policy/token.hpp"

#include <boost/json/serialize.hpp>

#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>

namespace airlock::filters::mcp {
namespace {

namespace json = boost::json;

std::string_view text_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

// What a tool of a tools/list answer may show the agent: nothing when it must go.
std::optional<dropped_tool> judge_tool(const json::object& tool, const policy::compiled_mcp& p,
                                       std::size_t rule, tool_memory& memory, bool& reported_only) {
  const std::string_view name = text_of(tool, "name");
  dropped_tool d;
  d.name = validation::printable(name);
  const json::value* schema = tool.if_contains("inputSchema");
  const std::string_view description = text_of(tool, "description");
  d.pin = tool_pin(description, schema != nullptr ? json::serialize(*schema) : std::string());
  if (!p.allows_method("tools/call") || (p.tools_listed && p.find_tool(name) == nullptr)) {
    d.why = "not allowed";
    return d;
  }
  std::string expected;
  if (const std::string* pinned = p.pin_of(name))
    expected = *pinned;
  else if (p.learn_pins)
    expected = memory.learn(rule, name, d.pin);
  std::optional<std::string_view> injection;
  if (p.scan_descriptions) {
    // The title and every description the model reads: the tool's and its parameters'.
    injection = dlp::find_injection(description);
    if (!injection) injection = dlp::find_injection(text_of(tool, "title"));
    if (!injection && schema != nullptr) injection = dlp::find_injection(json::serialize(*schema));
  }
  const bool changed = !expected.empty() && expected != d.pin;
  if (!changed && !injection) {
    memory.taint(rule, name, false);
    return std::nullopt;
  }
  d.why = changed ? std::string("description changed from its pin")
                  : core::str_cat("prompt injection (", *injection, ")");
  if (changed && injection) d.why += core::str_cat(" and prompt injection (", *injection, ")");
  d.taints = true;
  if (p.report_changes) {
    reported_only = true;
    d.taints = false;
  }
  memory.taint(rule, name, d.taints);
  return d;
}

}  // namespace

std::string tool_pin(std::string_view description, std::string_view input_schema_json) {
  return policy::sha256_hex(core::str_cat(description, "\n", input_schema_json));
}

bool tool_memory::tainted(std::size_t rule, std::string_view tool) const {
  std::lock_guard lock(mutex_);
  return tainted_.contains(key{rule, std::string(tool)});
}

void tool_memory::taint(std::size_t rule, std::string_view tool, bool on) {
  std::lock_guard lock(mutex_);
  if (on)
    tainted_.insert(key{rule, std::string(tool)});
  else
    tainted_.erase(key{rule, std::string(tool)});
}

std::string tool_memory::learn(std::size_t rule, std::string_view tool, const std::string& pin) {
  std::lock_guard lock(mutex_);
  for (const auto& [k, v] : learned_)
    if (k.first == rule && k.second == tool) return v;
  // Bounded: a server listing ever new names cannot grow this without limit.
  if (learned_.size() >= 4096) return pin;
  learned_.push_back({key{rule, std::string(tool)}, pin});
  for (const auto& f : files_) {
    if (f.rule != rule) continue;
    json::object line;
    line["rule"] = f.rule_name;
    line["tool"] = tool;
    line["sha256"] = pin;
    queue_.emplace_back(f.path, json::serialize(line) + "\n");
    if (!writer_.joinable()) writer_ = std::thread([this] { write_loop(); });
    wake_.notify_one();
  }
  return pin;
}

bool tool_memory::load(std::size_t rule, std::string_view rule_name, const std::string& path,
                       std::string& error) {
  std::vector<std::pair<key, std::string>> found;
  std::ifstream in(path);
  if (!in) {
    if (errno != ENOENT) {
      error = core::str_cat(path, ": ", std::strerror(errno));
      return false;
    }
  }
  std::string text;
  for (std::size_t n = 1; in && std::getline(in, text); ++n) {
    if (text.empty()) continue;
    json::error_code ec;
    const json::value v = json::parse(text, ec);
    const json::object* o = !ec && v.is_object() ? &v.get_object() : nullptr;
    const auto field = [&](std::string_view k) {
      return o != nullptr ? text_of(*o, k) : std::string_view{};
    };
    const std::string_view pin = field("sha256");
    if (field("rule").empty() || field("tool").empty() || pin.size() != 64 ||
        pin.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
      error = core::str_cat(path, ":", n, ": expected {\"rule\", \"tool\", \"sha256\"}");
      return false;
    }
    if (field("rule") == rule_name)
      found.push_back({key{rule, std::string(field("tool"))}, std::string(pin)});
  }
  std::lock_guard lock(mutex_);
  for (auto& f : found)
    if (learned_.size() < 4096) learned_.push_back(std::move(f));
  files_.push_back({rule, std::string(rule_name), path});
  return true;
}

void tool_memory::write_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    auto batch = std::move(queue_);
    queue_.clear();
    lock.unlock();
    for (const auto& [path, line] : batch) {
      // O_APPEND: each line lands whole at the end, whoever else appends.
      const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
      if (fd < 0) continue;  // the pin stays learned in memory
      (void)!::write(fd, line.data(), line.size());
      ::close(fd);
    }
    lock.lock();
    if (stopping_ && queue_.empty()) return;
  }
}

tool_memory::~tool_memory() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

namespace {

std::string_view list_key(list_kind kind) {
  return kind == list_kind::tools       ? "tools"
         : kind == list_kind::resources ? "resources"
                                        : "prompts";
}

// One listing's array filtered in place: tools judged one by one, resources and prompts kept
// or emptied as a whole. True when it changed.
bool filter_items(list_kind kind, json::array& a, const policy::compiled_mcp& p, std::size_t rule,
                  tool_memory& memory, listing_result& out) {
  const std::size_t before = a.size();
  if (kind != list_kind::tools) {
    if (!p.allows_method(kind == list_kind::resources ? "resources/read" : "prompts/get"))
      a.clear();
    return a.size() != before;
  }
  json::array kept;
  for (auto& t : a) {
    if (!t.is_object()) {
      out.dropped.push_back({"?", "not an object", {}, false, false});
      continue;
    }
    auto d = judge_tool(t.get_object(), p, rule, memory, out.reported_only);
    if (!d) {
      kept.push_back(std::move(t));
      continue;
    }
    // on_change: report keeps a changed or poisoned tool (recorded); never an unlisted one.
    d->kept = p.report_changes && d->why != "not allowed";
    if (d->kept) kept.push_back(std::move(t));
    out.dropped.push_back(std::move(*d));
  }
  a = std::move(kept);
  return a.size() != before;
}

// One message of the answer (filter_listing). True when it changed.
bool filter_message(json::value& m, std::span<const listing_request> requests,
                    const policy::compiled_mcp& p, std::size_t rule, tool_memory& memory,
                    listing_result& out) {
  if (!m.is_object()) return false;  // not a message: a client refuses it
  json::object& o = m.get_object();
  json::value* result = o.if_contains("result");
  if (result == nullptr) return false;  // a request, notification or error
  const json::value* id = o.if_contains("id");
  bool changed = false;
  unsigned done = 0;  // list_kind bits filtered already (two requests of one kind)
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const list_kind kind = requests[i].kind;
    json::value* items =
        result->is_object() ? result->get_object().if_contains(list_key(kind)) : nullptr;
    const bool by_id = id != nullptr && answers_id(*id, requests[i].id);
    if (!by_id && items == nullptr) continue;
    out.answered.push_back(i);
    if (by_id && !result->is_object()) {
      out.withhold = true;
      out.why = "a listing result that is not an object";
      return false;
    }
    const unsigned bit = 1u << static_cast<unsigned>(kind);
    if (items == nullptr || (done & bit) != 0) continue;  // no list: nothing shown
    if (!items->is_array()) {
      out.withhold = true;
      out.why = core::str_cat("'", list_key(kind), "' is not an array");
      return false;
    }
    done |= bit;
    changed = filter_items(kind, items->get_array(), p, rule, memory, out) || changed;
  }
  return changed;
}

}  // namespace

listing_result filter_listing(std::string_view message, std::span<const listing_request> requests,
                              const policy::compiled_mcp& p, std::size_t rule,
                              tool_memory& memory) {
  listing_result out;
  try {
    json::value root;
    if (auto bad = validation::parse_json(message, {}, root)) {
      out.withhold = true;
      out.why = core::str_cat("not strict JSON (", bad->constraint, ")");
      return out;
    }
    bool changed = false;
    if (root.is_array()) {
      // A batch of answers: the TypeScript SDK client takes one as an answer to a single POST.
      for (auto& m : root.get_array())
        changed = filter_message(m, requests, p, rule, memory, out) || changed;
    } else {
      changed = filter_message(root, requests, p, rule, memory, out);
    }
    if (out.withhold) return out;
    if (changed) out.rewritten = json::serialize(root);
  } catch (const std::exception&) {
    // Out of memory reading the answer: withhold it rather than pass it unread.
    out.withhold = true;
    out.why = "out of memory";
  }
  return out;
}

bool listing_stream::start(const media_type& type) {
  mode_ = type.is("application", "json")    ? mode::json
          : type.is("text", "event-stream") ? mode::sse
                                            : mode::off;
  return mode_ != mode::off;
}

bool listing_stream::start(std::string_view content_type) {
  const auto type = parse_media_type(content_type);
  return type && start(*type);
}

std::string listing_stream::withheld_answer(std::string_view why) {
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (answered_[i]) continue;
    answered_[i] = true;
    const std::string_view method = requests_[i].kind == list_kind::tools       ? "tools/list"
                                    : requests_[i].kind == list_kind::resources ? "resources/list"
                                                                                : "prompts/list";
    errors.push_back(error_object(
        requests_[i].id, refusal{kListingWithheld, core::errc::upstream_error,
                                 core::str_cat("the server's answer to ", method,
                                               " could not be read and was withheld: ", why)}));
  }
  if (errors.size() == 1) return std::move(errors[0]);
  std::string batch;
  for (const auto& e : errors)
    batch += core::str_cat(batch.empty() ? "[" : ",", e);
  return batch.empty() ? batch : batch + "]";
}

bool listing_stream::filter_into(std::string_view message, std::string& out,
                                 const sse_event* event) {
  listing_result r = filter_listing(message, requests_, policy_, rule_, memory_);
  for (auto& d : r.dropped)
    if (dropped_.size() < 64) dropped_.push_back(std::move(d));
  for (const std::size_t i : r.answered)
    if (i < answered_.size() && !r.withhold) answered_[i] = true;
  if (r.withhold) {
    if (withheld_.size() < 8) withheld_.push_back(r.why);
    const std::string errors = withheld_answer(r.why);
    if (errors.empty()) return true;  // every listing was answered: the message is dropped
    out.append(event != nullptr ? core::str_cat("event: message\ndata: ", errors, "\n\n") : errors);
    return true;
  }
  if (!r.rewritten) {
    out.append(event != nullptr ? event->raw : message);
    return true;
  }
  if (event == nullptr) {
    out.append(*r.rewritten);
    return true;
  }
  // The event again with the filtered data (one line: serialized JSON has no line breaks).
  if (!event->type.empty()) out.append(core::str_cat("event: ", event->type, "\n"));
  if (!event->id.empty()) out.append(core::str_cat("id: ", event->id, "\n"));
  out.append(core::str_cat("data: ", *r.rewritten, "\n\n"));
  return true;
}

bool listing_stream::feed(std::string_view piece, bool last, std::string& out) {
  if (mode_ == mode::empty) return piece.empty();
  if (mode_ == mode::json) {
    held_.append(piece);
    if (held_.size() > policy_.max_response_bytes) return false;
    if (!last) return true;
    const bool ok = filter_into(held_, out, nullptr);
    held_.clear();
    return ok;
  }
  bool ok = true;
  const auto on_event = [&](const sse_event& ev) {
    if (!ok) return;
    const bool not_a_message =
        from_ == source::server_stream && !ev.type.empty() && ev.type != "message";
    ok = ev.data.empty() || not_a_message ? (out.append(ev.raw), true)
                                          : filter_into(ev.data, out, &ev);
  };
  const bool read = sse_.feed(piece, on_event);
  if (!read || !ok) return false;
  // An event cut off by the end of the stream is not dispatched by the spec (section 9.2.6),
  // but a client's parser may flush it: it is read as if it had ended.
  if (last && !sse_.rest().empty()) {
    if (!sse_.feed("\n\n", on_event) || !ok) return false;
    out.append(sse_.rest());
  }
  return true;
}

}  // namespace airlock::filters::mcp
