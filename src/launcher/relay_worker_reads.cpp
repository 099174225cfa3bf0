// The relay loop's reads from each side (relay_worker.hpp). A relayed connection, and a
// captured one once its tunnel is established, is read straight into its buffer; a captured
// connection before that goes through its phases (capture_protocol.hpp): its first bytes
// sniffed, its HTTP request heads rewritten, the proxy's answer to its CONNECT read.

#include "core/log.hpp"
#include "launcher/capture_protocol.hpp"
#include "launcher/relay_worker.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>

namespace airlock::launcher {
using namespace relay_io;

relay_io::io relay::worker::read_client(connection& c) {
  if (c.ph == phase::relay || c.ph == phase::awaiting_reply)
    return classify_read(c.up.receive(c.client), owner_.bytes_up_);
  return read_client_captured(c);
}

// phase::sniff or phase::http: the bytes pass through here before they reach the buffer.
relay_io::io relay::worker::read_client_captured(connection& c) {
  char tmp[16 * 1024];
  const std::size_t want = std::min(sizeof tmp, std::max<std::size_t>(c.up.room(), 1));
  ssize_t r;
  do {
    r = ::recv(c.client, tmp, want, 0);
  } while (r < 0 && errno == EINTR);
  const io result = classify_read(r, owner_.bytes_up_);
  if (result == io::eof) c.client_eof = true;
  if (c.ph == phase::sniff) {
    if (result == io::ok) c.pending.append(tmp, static_cast<std::size_t>(r));
    if (result == io::ok || result == io::eof) decide(c);
    // classify decides within max_sniff_bytes; should it not, the buffer (in the host's
    // memory, outside the jail's --memory) still stops here.
    if (c.ph == phase::sniff && c.pending.size() > capture::max_sniff_bytes) {
      reset_connection(c);
      return io::error;
    }
    return result;
  }
  // phase::http
  std::string out;
  if (result == io::ok) c.rewriter->feed({tmp, static_cast<std::size_t>(r)}, out);
  if (result == io::eof) c.rewriter->finish(out);
  c.up.append(out);
  return result;
}

relay_io::io relay::worker::read_upstream(connection& c) {
  if (c.ph != phase::awaiting_reply)
    return classify_read(c.down.receive(c.upstream), owner_.bytes_down_);
  char tmp[4096];
  ssize_t r;
  do {
    r = ::recv(c.upstream, tmp, sizeof tmp, 0);
  } while (r < 0 && errno == EINTR);
  const io result = classify_read(r, owner_.bytes_down_);
  if (result != io::ok) return result;
  c.pending.append(tmp, static_cast<std::size_t>(r));
  const auto reply = capture::parse_connect_reply(c.pending);
  if (reply.result == capture::connect_reply::state::established) {
    c.down.append(std::string_view(c.pending).substr(reply.head_size));
    c.pending.clear();
    c.ph = phase::relay;
  } else if (reply.result == capture::connect_reply::state::refused) {
    owner_.capture_denied_.fetch_add(1, std::memory_order_relaxed);
    AIRLOCK_LOG(debug, "launcher", "capture: the proxy refused CONNECT ", c.authority, ": ",
                reply.status_line);
    reset_connection(c);
    return io::error;
  }
  return io::ok;
}

// Captured: the first bytes (or the end of them) decide how the proxy gets the connection.
void relay::worker::decide(connection& c) {
  const auto k = capture::classify(c.pending, c.client_eof);
  if (k == capture::kind::need_more) return;
  if (c.pending.empty()) {  // closed without a word: nothing to carry
    close_connection(c);
    return;
  }
  if (k == capture::kind::http) {
    c.rewriter.emplace(c.authority);
    std::string out;
    c.rewriter->feed(c.pending, out);
    if (c.client_eof) c.rewriter->finish(out);
    c.up.append(out);
    c.ph = phase::http;
    AIRLOCK_LOG(debug, "launcher", "capture: HTTP to ", c.authority);
  } else {
    c.up.append(capture::connect_request(c.authority));
    c.up.append(c.pending);
    c.ph = phase::awaiting_reply;
    AIRLOCK_LOG(debug, "launcher", "capture: CONNECT ", c.authority);
  }
  c.pending.clear();
}

}  // namespace airlock::launcher
