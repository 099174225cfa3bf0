#pragma once
// A server's answers to tools/list, resources/list and prompts/list, filtered to what the agent
// may call (MCP 2025-06-18, server/tools "Listing Tools"): a tool stays when the rule allows
// tools/call and lists it (or lists no tools), its description and input schema match their
// pin, and its description holds no prompt injection (dlp/injection.hpp); resources stay when
// resources/read is allowed, prompts when prompts/get is. A tool whose description changed
// from its pin (a "rug pull") or carries an injection is remembered as tainted (tool_memory):
// its calls are refused until a listing shows it as pinned again.
//
// @par Thread Safety
// filter_listing is a pure function but for `memory`, which is shared by every exchange of a
// snapshot and locks itself.

#include "filters/mcp/media_type.hpp"
#include "filters/mcp/sse.hpp"
#include "policy/mcp_compiler.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace airlock::filters::mcp {

enum class list_kind : std::uint8_t { tools, resources, prompts };

// A listing request of the body, by its id (JSON text).
struct listing_request {
  std::string id;
  list_kind kind = list_kind::tools;
};

// The pin of a tool: lower-case hex SHA-256 of its description, a newline, and its inputSchema
// as compact JSON (as the server sent it; "" for a tool without description).
std::string tool_pin(std::string_view description, std::string_view input_schema_json);

// Tools found changed or poisoned, per rule (by compiled_rule::index) and name, and the pins
// learned on first sight (`mcp.pins: learn`), kept in memory and, for a rule with
// `mcp.pins_file`, in that file: read by load() when the policy loads, appended to by a writer
// thread of its own (hooks do no I/O) as tools are first listed.
class tool_memory {
 public:
  tool_memory() = default;
  ~tool_memory();  // what is queued is written out first
  tool_memory(const tool_memory&) = delete;
  tool_memory& operator=(const tool_memory&) = delete;

  bool tainted(std::size_t rule, std::string_view tool) const;
  void taint(std::size_t rule, std::string_view tool, bool on);
  // The learned pin, or the one given (first sight); returns the pin in force.
  std::string learn(std::size_t rule, std::string_view tool, const std::string& pin);
  // The pins `path` holds for the rule named `rule_name` (JSON lines {"rule", "tool",
  // "sha256"}; a missing file holds none), learned for rule `rule`, whose new pins are appended
  // to `path` from now on. False, with `error` set, when the file cannot be read or a line is
  // malformed.
  bool load(std::size_t rule, std::string_view rule_name, const std::string& path,
            std::string& error);

 private:
  using key = std::pair<std::size_t, std::string>;
  struct pins_file {
    std::size_t rule;
    std::string rule_name;
    std::string path;
  };
  void write_loop();

  mutable std::mutex mutex_;
  std::set<key> tainted_;
  std::vector<std::pair<key, std::string>> learned_;
  std::vector<pins_file> files_;
  std::vector<std::pair<std::string, std::string>> queue_;  // (path, line) to append
  std::condition_variable wake_;
  std::thread writer_;
  bool stopping_ = false;
};

struct dropped_tool {
  std::string name;     // printable, bounded
  std::string why;      // "not allowed", "description changed", "prompt injection (CLASS)"
  std::string pin;      // the pin the server's tool has now
  bool taints = false;  // changed or poisoned: its calls are refused too
  bool kept = false;    // on_change: report: recorded, but still listed
};

struct listing_result {
  // The message rewritten (JSON text); nullopt: pass it unchanged.
  std::optional<std::string> rewritten;
  std::vector<dropped_tool> dropped;
  bool reported_only = false;  // on_change: report: changes are recorded, tools kept
  // The message could not be read (not strict JSON, nested too deep, a list that is not an
  // array): it must not pass on. `why` says why (a constant and the parser's constraint).
  bool withhold = false;
  std::string why;
  std::vector<std::size_t> answered;  // the requests (indexes) it answers
};

// `message`: a JSON-RPC message (or a batch of them) from the server, answering the body whose
// listing requests are `requests`. A result answers a listing when its id is the request's by
// any reading a client has (answer_id.hpp: 1, "1", 1.0), or when it carries the listing's
// array ("tools", "resources", "prompts") whatever its id: a client matches by id, which the
// server chooses, so every result that could be taken for a listing is filtered as one.
// Anything else (notifications, requests, errors, other results) passes unchanged. A message
// that is not strict JSON (validation/json_body.hpp: a duplicated key, deeper than
// max_json_depth, not UTF-8) is withheld: a client's laxer parser may read a listing in it.
listing_result filter_listing(std::string_view message, std::span<const listing_request> requests,
                              const policy::compiled_mcp& policy, std::size_t rule_index,
                              tool_memory& memory);

// A response body answering listing requests, as it streams: application/json held whole (up
// to the policy's max_response_bytes) and filtered at its end; text/event-stream read event by
// event (each held up to the same limit), listing answers filtered, every other event passed
// as it completes. A message withheld (listing_result::withhold) is replaced by JSON-RPC errors
// (kListingWithheld) for the listing requests not answered yet, or dropped when all were.
//
// On the server's own stream (a GET: `source::server_stream`, no listing requests of its own) an
// event whose type is neither absent nor "message" passes as it is: clients read only those as
// JSON-RPC (the older transport's "endpoint" event carries a URL), and a withheld message is
// dropped (what it answered is not known here).
class listing_stream {
 public:
  enum class source : std::uint8_t { post_answer, server_stream };
  // The answer to a POST whose listing requests are `requests`.
  listing_stream(const policy::compiled_mcp& policy, std::size_t rule, tool_memory& memory,
                 std::vector<listing_request> requests)
      : policy_(policy),
        rule_(rule),
        memory_(memory),
        requests_(std::move(requests)),
        answered_(requests_.size(), false),
        from_(source::post_answer),
        sse_(policy.max_response_bytes) {}
  // The server's own stream: every kind of listing, by its array only (no id: "" answers none),
  // each answered already, so that a withheld message leaves no error to send in its place.
  listing_stream(const policy::compiled_mcp& policy, std::size_t rule, tool_memory& memory, source)
      : listing_stream(
            policy, rule, memory,
            {{"", list_kind::tools}, {"", list_kind::resources}, {"", list_kind::prompts}}) {
    from_ = source::server_stream;
    answered_.assign(requests_.size(), true);
  }
  bool server_stream() const noexcept { return from_ == source::server_stream; }

  // From the response's Content-Type (media_type.hpp): whether this body is read at all
  // (application/json or text/event-stream).
  bool start(const media_type& type);
  bool start(std::string_view content_type);
  // An answer that says it is empty (Content-Length: 0): any byte of it fails feed().
  void start_empty() { mode_ = mode::empty; }
  // One piece of the body; what may go on is appended to `out`. False: over the limit (or an
  // answer that could not be read), nothing more may be sent.
  bool feed(std::string_view piece, bool last, std::string& out);
  const std::vector<dropped_tool>& dropped() const noexcept { return dropped_; }
  // Why messages were withheld (the first few), for the record.
  const std::vector<std::string>& withheld() const noexcept { return withheld_; }

 private:
  bool filter_into(std::string_view message, std::string& out, const sse_event* event);
  // The JSON-RPC errors standing for a withheld message: one per listing request not answered
  // yet (a batch when several), "" when all were.
  std::string withheld_answer(std::string_view why);

  const policy::compiled_mcp& policy_;
  std::size_t rule_;
  tool_memory& memory_;
  std::vector<listing_request> requests_;
  std::vector<bool> answered_;  // by requests_ index
  source from_;
  enum class mode { off, json, sse, empty } mode_ = mode::off;
  std::string held_;
  sse_reader sse_;
  std::vector<dropped_tool> dropped_;
  std::vector<std::string> withheld_;
};

}  // namespace airlock::filters::mcp
