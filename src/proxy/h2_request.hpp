#pragma once
// The HTTP/2 codec's heads (RFC 9113 section 8.3): a stream's header list into the exchange and
// an HTTP/1.1 request head for the origin (as h1_request.hpp does for an HTTP/1.1 request inside
// a tunnel), and a response head into an HTTP/2 field list. nghttp2 has already checked what
// RFC 9113 section 8.2 requires of the list (pseudo-headers, no connection-specific fields,
// field characters, Content-Length against the DATA received).

#include "filters/exchange.hpp"
#include "h2/server_session.hpp"
#include "policy/model.hpp"
#include "proxy/h1_request.hpp"

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace airlock::proxy {

// Fills `req` and `ex` (method, target, path, framing; the record's fields) from a stream's
// complete request head inside the tunnel to `target`. A refusal is recorded nowhere: the
// caller does that.
std::optional<h1::refusal> h2_parse_request(const h2::stream& st, const net::authority& target,
                                            const policy::model::limits& limits,
                                            http::request<http::buffer_body>& req,
                                            filters::exchange& ex);

// Rewrites the head for an HTTP/1.1 origin (h1::rewrite_for_upstream), framed by the body:
// held whole (its length), Content-Length as the client declared it, or chunked.
void h2_rewrite_for_upstream(http::request<http::buffer_body>& req, const filters::exchange& ex,
                             const std::string* held);

// A response head's fields for HTTP/2: names in lower case, connection-specific fields left out
// (RFC 9113 section 8.2.2).
h2::header_list h2_response_fields(const http::fields& fields);

void h2_drop_field(h2::header_list& fields, std::string_view name);

// Whether the request is a gRPC call (content-type application/grpc, with or without a
// subtype: the gRPC over HTTP/2 protocol).
bool is_grpc(const http::fields& request);
bool is_grpc_type(std::string_view content_type);

// The proxy's own answer (its status, fields and one-line reason) as a gRPC client reads it:
// grpc-status from the HTTP status (403 PERMISSION_DENIED, 429/413/431 RESOURCE_EXHAUSTED, 407
// UNAUTHENTICATED, 502/503/504 UNAVAILABLE, anything else INTERNAL) and grpc-message the
// reason, percent-encoded; the Proxy-Status and X-Airlock-Reason fields are kept. With
// `content_type`, the head of a trailers-only response (HTTP 200); without, the trailers that
// end an answer already under way.
h2::header_list grpc_answer_fields(const http::response<http::string_body>& answer,
                                   bool content_type = true);

}  // namespace airlock::proxy
