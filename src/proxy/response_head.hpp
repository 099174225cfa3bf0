#pragma once
// An origin's HTTP/1.1 response head that could not be read, or is refused, recorded as the
// exchange's failure (both upstream paths: forward.hpp, h2_stream_h1_upstream.cpp).

#include "filters/exchange.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/system/error_code.hpp>

namespace airlock::proxy {

// Records why the response head could not be read. False when the proxy cut the read itself
// (asio's operation_aborted: a socket closed under it by the drain's end, the kill switch, or
// the client's connection ending): there is nobody to answer, the origin is not to blame (no
// upstream failure, no airlock_upstream_errors_total), and the record says what happened —
// `shutting_down` when `draining`, else the decision as made with "response not delivered".
bool record_response_failure(filters::exchange_record& rec, const boost::system::error_code& ec,
                             bool draining);

// A response whose framing the proxy does not undo whole (net::response_framing_problem) is
// refused; true when it was.
bool refused_response_framing(filters::exchange_record& rec,
                              const boost::beast::http::response_header<>& res);

}  // namespace airlock::proxy
