#pragma once
// The 101 path of forward() (forward.hpp): an allowed upgrade passed on, then the connection
// relayed as the upgraded protocol.

#include "core/errc.hpp"
#include "filters/chain.hpp"
#include "policy/model.hpp"
#include "proxy/h1_body.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/session_io.hpp"
#include "proxy/tunnel.hpp"
#include "proxy/websocket_relay.hpp"
#include "websocket/deflate.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>
#include <string>

namespace airlock::proxy::forward_detail {

// A 101 answer to an allowed upgrade: passed on, then the connection becomes a tunnel for the
// upgraded protocol: for WebSocket, a relay of messages through the chain
// (websocket_relay.hpp); for anything else, a byte stream.
template <class Client, class Upstream>
boost::asio::awaitable<void> switch_protocols(
    Client& client, boost::beast::flat_buffer& client_buffer, Upstream& upstream,
    boost::beast::flat_buffer& up_buffer, http::response<http::buffer_body>& res,
    filters::chain& chain, const std::string& upgrade, const policy::model::limits& limits,
    unsigned version) {
  auto& ex = chain.ex();
  const bool websocket = upgrade == "websocket";
  std::optional<websocket::negotiation> agreed;
  if (websocket) {
    // The extensions the origin agreed to (the proxy offered only permessage-deflate,
    // h1::rewrite_for_upstream): frames of any other would be unreadable.
    agreed = websocket::negotiated(res[http::field::sec_websocket_extensions]);
    if (!agreed->ok) {
      ex.record.failed_upstream(core::errc::upstream_error);
      ex.record.refuse(core::errc::upstream_error,
                       "origin agreed to a WebSocket extension the proxy cannot read");
      co_await send_answer(client, ex.record, version, false);
      co_return;
    }
  }
  strip_hop_by_hop(res);
  res.set(http::field::connection, "upgrade");
  res.set(http::field::upgrade, upgrade);
  http::response_serializer<http::buffer_body> sr{res};
  set_timeout(client, limits.idle_timeout);
  auto [wec, wn] = co_await http::async_write_header(client, sr, use_tuple);
  if (wec) co_return;
  // Bytes already buffered past the heads belong to the new protocol (a WebSocket relay reads
  // them as its first frames).
  if (!websocket && client_buffer.size() > 0) {
    auto [e1, n1] = co_await boost::asio::async_write(upstream, client_buffer.data(), use_tuple);
    client_buffer.consume(client_buffer.size());
    if (e1) co_return;
  }
  if (!websocket && up_buffer.size() > 0) {
    auto [e2, n2] = co_await boost::asio::async_write(client, up_buffer.data(), use_tuple);
    up_buffer.consume(up_buffer.size());
    if (e2) co_return;
  }
  clear_timeout(client);
  clear_timeout(upstream);
  tunnel_totals totals;
  if (websocket) {
    const auto max_message = ex.rule->source ? ex.rule->source->websocket.max_message_bytes
                                             : policy::model::websocket_limits{}.max_message_bytes;
    websocket_conversation conv(chain, max_message, agreed->deflate.has_value());
    co_await relay_websocket(client, client_buffer, upstream, up_buffer, conv, limits.idle_timeout,
                             byte_throttle{ex.upload}, byte_throttle{ex.download}, totals);
  } else {
    totals = co_await splice(client, upstream, limits.idle_timeout, byte_throttle{ex.upload},
                             byte_throttle{ex.download});
  }
  ex.record.bytes_in += totals.client_to_upstream;
  ex.record.bytes_out += totals.upstream_to_client;
}

}  // namespace airlock::proxy::forward_detail
