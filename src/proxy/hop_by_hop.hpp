#pragma once
// Hop-by-hop header handling (RFC 9110 section 7.6.1, RFC 9112 section 9.6): headers that
// describe one connection, not the message, are removed before a message is forwarded.

#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace airlock::proxy {

// Removes Connection and every header it names, Keep-Alive, Proxy-Connection,
// Proxy-Authorization, Proxy-Authenticate, TE, Trailer and Upgrade. Transfer-Encoding and
// Content-Length are left to the serializer (they frame the body being relayed). Returns the
// Upgrade value (lower case) when the client asked for an upgrade through Connection: upgrade,
// so the caller can decide whether to keep it.
std::string strip_hop_by_hop(boost::beast::http::fields& fields);

}  // namespace airlock::proxy
