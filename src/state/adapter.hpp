#pragma once
// hiredis's async API driven by Boost.Asio: the five event hooks of redisAsyncContext::ev
// (hiredis/async.h) as waits on a posix::stream_descriptor over hiredis's own socket. hiredis
// keeps ownership of the descriptor (it closes it in redisAsyncFree), so the stream_descriptor
// releases it rather than closing it. hiredis ships adapters for libevent, libev, libuv, ...
// but not Asio; this is the same dozen lines as its libuv adapter.
//
// @par Thread Safety
// Everything runs on the thread that runs the io_context (hiredis contexts are not thread-safe).

#include <boost/asio/io_context.hpp>

struct redisAsyncContext;

namespace airlock::state {

// Attaches `ac` to `ioc`; false when its socket is not usable. The adapter frees itself when
// hiredis calls its cleanup hook (from redisAsyncFree or a disconnect).
bool attach_asio(redisAsyncContext* ac, boost::asio::io_context& ioc);

}  // namespace airlock::state
