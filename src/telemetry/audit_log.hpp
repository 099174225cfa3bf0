#pragma once
// One JSON line per request (Boost.JSON), to stdout or a file. Records carry no secrets: the
// proxy never puts header values or query strings in them.
//
// Thread safety: every member function may be called from any thread. write() formats the line
// on the calling thread without a lock, then appends it to a shared buffer under a short
// mutex; a background thread writes the buffer out every 100 ms or as soon as it holds 64 KiB.
// flush() and the destructor write out everything written before them.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace airlock::telemetry {

struct audit_event;  // telemetry/audit_event.hpp
class event_hub;     // telemetry/event_hub.hpp

// One outbound DLP finding: detector class, where in the request, action taken.
struct audit_dlp_finding {
  std::string_view cls;
  std::string_view location;
  std::string_view action;
};

// One MCP / JSON-RPC message of the request: method and tool (bounded names, see filters/mcp).
struct audit_mcp_call {
  std::string_view method;
  std::string_view tool;
};

struct audit_record {
  std::chrono::system_clock::time_point time;  // when the request arrived
  std::string_view agent;
  std::string_view method;
  std::string_view scheme;  // "http", "https" (inspected), "connect" (opaque tunnel)
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view path;      // path only, never the query string
  std::string_view rule;      // empty when no rule matched
  std::string_view decision;  // "allow", "deny", "report" (would have denied), "error"
  std::string_view reason;    // core::errc name
  std::string_view detail;
  unsigned status = 0;          // HTTP status sent to the client (200 for a tunnel)
  std::uint64_t bytes_in = 0;   // request body bytes from client (tunnel: client->upstream)
  std::uint64_t bytes_out = 0;  // response body bytes to client (tunnel: upstream->client)
  std::chrono::microseconds duration{0};
  std::string_view upstream;               // "ip:port" connected to; empty if none
  std::string_view protocol = "http/1.1";  // what carried it: "http/1.1", "h2", "websocket"
  std::string_view upstream_protocol;      // "h2" when the origin was spoken to over HTTP/2
  std::string_view client;                 // "ip:port" of the client
  std::string_view policy_version;
  // Response redaction: how often each redactor (or "secret:NAME") fired; absent when none.
  std::span<const std::pair<std::string_view, std::uint64_t>> redactions;
  // Names of the secrets the proxy added to the request (never values); absent when none.
  std::span<const std::string_view> injected;
  // The program behind a relayed connection (net/peer_binary.hpp): its path in the jail, its
  // SHA-256 and its ancestors (parent first). All absent when unknown.
  std::string_view binary;
  std::string_view binary_sha256;
  std::span<const std::string> binary_ancestors;
  // Outbound DLP findings (names only, never the value); absent when none.
  std::span<const audit_dlp_finding> dlp;
  // MCP / JSON-RPC messages (a batch has several); absent when none.
  std::span<const audit_mcp_call> mcp;
  // A WebSocket connection's summary (one record for the whole connection).
  struct websocket_summary {
    std::uint64_t client_messages = 0;
    std::uint64_t origin_messages = 0;
    std::uint16_t close_code = 0;
    std::string_view closed_by;
    std::string_view refused_from;
    std::uint16_t close_reply_code = 0;
  };
  std::optional<websocket_summary> websocket;
};

class audit_log {
 public:
  // path: "-" for stdout, "off" to disable, else a file opened for append (created with mode
  // 0640). Returns null and sets `error` when the file cannot be opened.
  // `ocsf`: write OCSF 1.1.0 events (ocsf_format.hpp) instead of the JSON lines.
  static std::unique_ptr<audit_log> open(const std::string& path, std::string& error,
                                         bool ocsf = false);
  ~audit_log();

  // Never blocks on I/O. A record that cannot be formatted or buffered (out of memory, or more
  // than 16 MiB waiting because the sink is stuck) is dropped and counted.
  void write(const audit_record& record) noexcept;
  // An operator's action or an approval's event (audit_event.hpp), on the same terms.
  void write(const audit_event& event) noexcept;
  // Each line written from now on is also published to `hub` (GET /events), even when the
  // log itself is "off"; null stops that. The hub must outlive the log's writers.
  void set_live_events(event_hub* hub) noexcept;
  // Writes out everything buffered so far (blocking), e.g. before exit.
  void flush() noexcept;
  // Reopens the file by its path (after logrotate moved it; call on SIGHUP). Lines buffered
  // before the call go to the old file. No-op returning true for stdout and "off"; false (and
  // a log line) when the file cannot be opened, in which case the old file stays in use.
  bool reopen() noexcept;

  // While the sink fails (a full or failing disk: ENOSPC, EIO, ...) records wait in memory and
  // the background thread tries them again every 100 ms; a write cut short never leaves part of
  // a line in the file (audit_sink.hpp).
  // False from a failed write until everything waiting was written; an atomic read, no I/O, so
  // every exchange may ask (audit.on_failure: deny refuses new ones meanwhile).
  bool writable() const noexcept;
  // Failed write attempts to the sink (each retry of a failing sink counts).
  std::uint64_t write_errors() const noexcept;
  // Records lost: dropped by write() (out of memory, or 16 MiB already waiting), or still
  // waiting for a failing sink at exit.
  std::uint64_t dropped_records() const noexcept;
  // Records accepted by write() (including ones later lost to a failing sink).
  std::uint64_t written_records() const noexcept;

  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

 private:
  struct impl;
  explicit audit_log(std::unique_ptr<impl> p);
  template <typename Record>
  void write_line(const Record& record) noexcept;
  std::unique_ptr<impl> impl_;
};

}  // namespace airlock::telemetry
