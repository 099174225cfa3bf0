#pragma once
// Answers the proxy makes itself (denials and failures). Each carries the RFC 9209
// Proxy-Status header with the error token and a details string, the X-Airlock-Reason header
// with the stable reason name, and a one-line text body saying the same, so an agent (or the
// human reading its transcript) can tell exactly why and what to change.

#include "core/errc.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string_view>

namespace airlock::proxy {

namespace http = boost::beast::http;

// detail must not contain secrets; it is escaped for the quoted-string of Proxy-Status.
http::response<http::string_body> make_answer(core::errc why, std::string_view detail,
                                              unsigned version, bool keep_alive);

// The proxy's own endpoint's answer (airlock.internal): `status` with a JSON body.
http::response<http::string_body> make_endpoint_answer(unsigned status, std::string_view json,
                                                       unsigned version, bool keep_alive);

// RFC 9110 quoted-string content: backslash-escape '"' and '\', drop control characters.
std::string quote_for_header(std::string_view text);

}  // namespace airlock::proxy
