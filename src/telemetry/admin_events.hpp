#pragma once
// GET /events on the admin port: the live event stream (text/event-stream, WHATWG HTML
// section 9.2 "Server-sent events") of one event_hub subscription. Internal to admin_server.

#include "telemetry/event_hub.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace airlock::telemetry {

struct event_stream_timing {
  std::chrono::milliseconds poll{200};         // how often the queue is looked at
  std::chrono::milliseconds heartbeat{15000};  // a comment line when nothing else was sent
  std::chrono::milliseconds write_timeout{10000};
};

// Writes the answer's head, then each event as `data: JSON` (and `event: lost` with
// {"lost": N} when the subscriber's queue overflowed), and a `: heartbeat` comment when idle,
// until a write fails (the client went) or `stopping()` is true. The connection then closes.
boost::asio::awaitable<void> serve_events(boost::beast::tcp_stream& stream,
                                          std::shared_ptr<event_hub::subscription> sub,
                                          std::function<bool()> stopping,
                                          event_stream_timing timing = {});

}  // namespace airlock::telemetry
