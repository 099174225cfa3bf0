#pragma once
// An origin's HTTP/1.1 response head that could not be read, or is refused, recorded as the
// exchange's failure (both upstream paths: forward.hpp, h2_stream_h1_upstream.cpp).

#include "filters/exchange.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/system/error_code.hpp>

namespace airlock::proxy {

// Records why the response head could not be read.
void record_response_failure(filters::exchange_record& rec, const boost::system::error_code& ec);

// A response whose framing the proxy does not undo whole (net::response_framing_problem) is
// refused; true when it was.
bool refused_response_framing(filters::exchange_record& rec,
                              const boost::beast::http::response_header<>& res);

}  // namespace airlock::proxy
