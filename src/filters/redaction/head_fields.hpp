#pragma once
// Redaction's edits of heads: a response's header values redacted in one pass, and a request's
// Accept-Encoding narrowed to the codings the proxy can decode and its Range removed.

#include "filters/redaction/engine.hpp"

#include <boost/beast/http/fields.hpp>

namespace airlock::filters::redaction {

// Redacts every response header value in place but the framing fields the proxy itself relies
// on (Content-Length, Transfer-Encoding), all in one stream, and removes a field whose name
// carries a value (as sent or upper-cased); hits are added to `hits`.
void redact_head(const engine& e, boost::beast::http::fields& head, hit_counts& hits);

// Under a redacting rule only codings the proxy can decode may come back: the client's
// Accept-Encoding is narrowed to gzip, deflate and identity (identity when nothing is left).
void narrow_accept_encoding(boost::beast::http::fields& head);

// A response read for secrets or instructions must come whole: with a Range request (RFC 9110
// section 14.2) a client could fetch a value in pieces none of which matches. Range and
// If-Range (section 13.1.5) are removed, so the origin answers 200 with the whole
// representation (section 14.2: a server may always ignore Range; clients expect that).
void ask_for_whole_representation(boost::beast::http::fields& head);

}  // namespace airlock::filters::redaction
