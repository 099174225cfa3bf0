#pragma once
// An exchange: one request and its response, whatever carried it. A codec (HTTP/1.1 on a client
// connection or inside an intercepted tunnel today; an HTTP/2 stream or a WebSocket message
// next) fills it in; the filter chain (chain.hpp) decides, controls and transforms it; the
// session records it once when it ends (the audit line and the metrics are written from
// `record`).
//
// Heads are Beast's header types because they are plain containers (no I/O): an HTTP/2 codec
// fills the same fields from its header list.
//
// @par Thread Safety
// One exchange is used by one session on one thread.

#include "core/errc.hpp"
#include "core/steady_ns.hpp"
#include "filters/rate_limit/byte_pace.hpp"
#include "net/host.hpp"
#include "net/peer_binary.hpp"

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::policy {
class snapshot;
struct compiled_agent;
struct compiled_rule;
}  // namespace airlock::policy

namespace airlock::filters {

class chain;

// A refusal answered in the protocol the client speaks instead of the proxy's text answer (a
// JSON-RPC error object for an MCP call, filters/mcp): status, content type and body. The
// Proxy-Status and X-Airlock-Reason headers are still sent. It goes to the client only, never
// to a log: the body may echo what the client sent (a JSON-RPC id).
struct protocol_answer {
  unsigned status = 200;
  std::string content_type;
  std::string body;
};

// What happened to one exchange, for its one audit line and its metrics. Names and reasons
// only: nothing here may hold a secret.
struct exchange_record {
  std::string agent = "-";
  std::string method;
  std::string scheme = "http";
  std::string host;
  std::uint16_t port = 0;
  std::string path;
  // The protocol that carried the request: "http/1.1", "h2" or "websocket" (after a 101); a
  // constant, never owned.
  std::string_view protocol = "http/1.1";
  // The protocol to the origin when it differs from HTTP/1.1 ("h2"); "" otherwise. A constant.
  std::string_view upstream_protocol;
  std::string rule;
  core::errc reason = core::errc::ok;
  std::string detail;
  unsigned status = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::string upstream;
  std::chrono::microseconds connect_time{0};
  // Names of the secrets injected, and each redactor's hit count; they point into the snapshot
  // and the redaction engine, which outlive the record.
  std::vector<std::string_view> injected;
  std::vector<std::pair<std::string_view, std::uint64_t>> redactions;
  // The program behind the connection (relay connections only); owned by the session.
  const net::peer_binary* binary = nullptr;
  // Outbound DLP findings (filters/dlp): class, where ("query", "header", "body", ...) and the
  // action taken ("block", "report"). Names only; they point at the DLP scanner and constants.
  struct dlp_finding {
    std::string_view cls;
    std::string_view location;
    std::string_view action;
  };
  std::vector<dlp_finding> dlp;
  // MCP / JSON-RPC messages of the request (filters/mcp): method and tool, each a name the
  // policy lists, a fixed word ("other", "response", "-") or a constant: bounded labels.
  struct mcp_call {
    std::string_view method;
    std::string_view tool;  // "-" unless tools/call
  };
  std::vector<mcp_call> mcp;
  // The refusal's answer in the client's protocol (set by the chain from the verdict); null:
  // the proxy's own text answer.
  std::shared_ptr<const protocol_answer> answer;
  // A WebSocket connection's summary (protocol "websocket"): messages each way that were
  // forwarded, who started the closing handshake and with which code, the code of the Close
  // that answered it, and the message refused (which side sent it) if one was. Counts, never
  // content.
  struct websocket_summary {
    std::uint64_t client_messages = 0;
    std::uint64_t origin_messages = 0;
    std::uint16_t close_code = 0;        // the first Close's; 0: none came, or it had no code
    std::string_view closed_by;          // "client", "origin" or "proxy": who sent the first Close
    std::string_view refused_from;       // "client" or "origin" when a message was refused
    std::uint16_t close_reply_code = 0;  // the answering Close's; 0: none, or it had no code
  };
  std::optional<websocket_summary> websocket;
  std::uint32_t retry_after = 0;  // seconds, for a Retry-After header on a 429 (0 = none)
  // The proxy's own endpoint (http://airlock.internal/, filters/approval/access_filter.hpp)
  // answered with this status and JSON body instead of an error page (0: not answered so).
  unsigned answer_status = 0;
  std::string answer_body;
  bool skipped = false;          // nothing to record (the connection closed before a request)
  bool reported = false;         // report mode let a refusal through
  bool upstream_failed = false;  // the upstream (DNS, connect, TLS, response) failed

  // The proxy answers this exchange itself, for this reason.
  void refuse(core::errc why, std::string why_detail) {
    reason = why;
    detail = std::move(why_detail);
  }
  // Report mode: the request goes through, recorded as what would have been refused.
  void report(core::errc would_refuse, std::string why) {
    reported = true;
    refuse(would_refuse, std::move(why));
  }
  // The upstream failed: decision "error".
  void failed_upstream(core::errc why) {
    upstream_failed = true;
    reason = why;
  }
  // Connecting failed: the address guard's refusal is a policy denial, anything else an
  // upstream failure.
  void connect_failed(core::errc why) {
    if (why == core::errc::destination_ip_prohibited)
      reason = why;
    else
      failed_upstream(why);
  }
  // "allow", "deny", "report" or "error": the audit record's and the metric's decision.
  std::string_view decision() const noexcept {
    return upstream_failed            ? "error"
           : reported                 ? "report"
           : reason == core::errc::ok ? "allow"
                                      : "deny";
  }

  // The exchange's chain while it lives (set and cleared by the chain): the proxy's own answer
  // from this record tells it first (chain::answered), so that what the exchange held for the
  // origin (a `concurrent` slot) is free before the client can have the answer. Not recorded.
  filters::chain* chain = nullptr;
};

struct exchange {
  // --- set by the codec and the session before the chain runs ---
  const policy::snapshot* snapshot = nullptr;  // the policy this exchange started under
  exchange_record record;
  // The request head as it will be forwarded: filters may edit its fields (injection, the
  // narrowed Accept-Encoding). Its target is not used: `path_and_query` is.
  boost::beast::http::request_header<>* request = nullptr;
  net::authority target;
  std::string path_and_query;  // origin-form target as forwarded (filters may rewrite it)
  std::string path;            // without the query, as the agent sent it (for rules and audit)
  bool connect = false;        // a CONNECT: opaque or to be intercepted
  bool in_tunnel = false;      // a request inside a tunnel (intercepted, or plain HTTP)
  bool tunnel_plain = false;   // in_tunnel, and the client speaks plain HTTP inside (scheme http)
  // in_tunnel: the rule the CONNECT was allowed by (its tunnel holds that rule's slots).
  std::string_view tunnel_rule;
  // An HTTP/2 stream: how many other streams of its connection were in flight as it began.
  std::size_t streams_alongside = 0;
  std::string upgrade;  // the protocol the client asks to switch to, lower case
  bool has_body = false;
  std::optional<std::uint64_t> content_length;
  const policy::compiled_agent* agent = nullptr;  // identified before the chain runs
  // The program that opened the connection, as the launcher's relay found it; null for a
  // direct client or when the relay found none. Rules with `binaries` need it.
  const net::peer_binary* binary = nullptr;
  // The clock filters read (steady nanoseconds); tests replace it.
  std::int64_t (*clock)() noexcept = core::steady_now_ns;

  // --- filled by filters for the session and for the filters after them ---
  const policy::compiled_rule* rule = nullptr;  // the rule that allowed the request
  // A request the decision refused although a rule names its host (its port, method or path
  // is not allowed): that rule, whose `dlp` reads what the refusal records (null otherwise).
  const policy::compiled_rule* refused_under = nullptr;
  // Report mode applies: a reportable refusal is recorded and the request goes on.
  bool report_mode = false;
  // Not zero: the request is to be held for an operator's approval for at most this long (a
  // rule's `ask`, or approvals.ask_unmatched; set by the decision filter, held by the approval
  // filter unless a grant covers it).
  std::chrono::milliseconds hold_for{0};
  // A request to the proxy's own endpoint (airlock.internal): the access filter answers it and
  // the decision filter leaves it alone (it is never resolved or forwarded).
  bool proxy_endpoint = false;
  // Secrets whose placeholder the request carries (to hosts they are bound to).
  std::vector<std::size_t> placeholders;
  // The most request body allowed (the codec enforces it while the body streams).
  std::uint64_t body_limit = 0;
  // Paces the request and response bodies (off unless an agent or rule sets byte rates).
  rate_limit::byte_pace upload;
  rate_limit::byte_pace download;
  // Set when the exchange ends (the circuit breaker tripped on it), for a log line and metric.
  bool breaker_tripped = false;
  // A request body held whole that a filter rewrote (DLP's `redact`): the codec forwards this
  // instead, with its length. Only for bodies of body_use::whole.
  std::optional<std::string> rewritten_body;

  // --- the response, set by the codec before the response hooks ---
  boost::beast::http::response_header<>* response = nullptr;
  // The response carries a body (not HEAD, 204 or 304).
  bool response_has_body = true;
  // A filter changes the response body's length: the codec re-frames it.
  bool response_reframed = false;
};

}  // namespace airlock::filters
