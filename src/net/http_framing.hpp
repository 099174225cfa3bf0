#pragma once
// Request framing checks beyond what Beast's parser enforces (RFC 9112 section 6.3), the
// smuggling defences of the HTTP/1.1 codec: one Content-Length at most, one Host, never both
// framing headers, and "chunked" as the only transfer coding a request may use. Pure: no I/O.

#include <boost/beast/http/message.hpp>

#include <string_view>

namespace airlock::net {

// Why the head's framing is refused; empty when it is acceptable.
std::string_view framing_problem(const boost::beast::http::request_header<>& req);

}  // namespace airlock::net
