// An exchange over an HTTP/2 upstream (h2_upstream_exchange.hpp).
#include "proxy/h2_upstream_exchange.hpp"

#include "core/ascii.hpp"
#include "core/saturating_steady.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/hop_by_hop.hpp"
#include "tls/contexts.hpp"

#include <boost/beast/http/chunk_encode.hpp>

#include <nghttp2/nghttp2.h>

namespace airlock::proxy {
namespace asio = boost::asio;
using core::errc;

namespace {

// RFC 9113 section 8.2.2: connection-specific fields are not sent over HTTP/2 ("te" only as
// "trailers", which is added).
bool connection_specific(std::string_view name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade" || name == "te" ||
         name == "http2-settings" || name == "host";
}

// RFC 9110 section 6.5.1: fields a trailer must not carry (message framing, routing, request
// modifiers, authentication, response control, payload processing).
bool not_a_trailer(std::string_view name) {
  static constexpr std::string_view forbidden[] = {"content-length",
                                                   "transfer-encoding",
                                                   "content-encoding",
                                                   "content-type",
                                                   "content-range",
                                                   "host",
                                                   "authorization",
                                                   "proxy-authorization",
                                                   "set-cookie",
                                                   "cookie",
                                                   "cache-control",
                                                   "expect",
                                                   "max-forwards",
                                                   "pragma",
                                                   "range",
                                                   "te",
                                                   "trailer",
                                                   "age",
                                                   "expires",
                                                   "date",
                                                   "location",
                                                   "retry-after",
                                                   "vary",
                                                   "warning",
                                                   "www-authenticate",
                                                   "proxy-authenticate"};
  if (name.empty() || name.front() == ':' || connection_specific(name)) return true;
  for (auto f : forbidden)
    if (name == f) return true;
  return false;
}

}  // namespace

bool upstream_h2_allowed(const filters::exchange& ex) {
  const auto* source = ex.rule ? ex.rule->source : nullptr;
  return ex.upgrade.empty() && (!source || (source->protocols & policy::model::protocol_h2) != 0);
}

h2::header_list h2_request_fields(const http::request<http::buffer_body>& req) {
  h2::header_list out;
  out.emplace_back(":method", std::string(req.method_string()));
  out.emplace_back(":scheme", "https");
  out.emplace_back(":authority", std::string(req[http::field::host]));
  out.emplace_back(":path", std::string(req.target()));
  for (const auto& f : req) {
    auto name = core::lower(f.name_string());
    if (connection_specific(name)) continue;
    out.emplace_back(std::move(name), std::string(f.value()));
  }
  // gRPC servers insist on it; and the proxy does pass trailers on (RFC 9110 section 10.1.4).
  out.emplace_back("te", "trailers");
  return out;
}

void h2_fill_response(const h2::header_list& fields, http::response<http::buffer_body>& res) {
  for (const auto& [name, value] : fields) {
    if (name == ":status") {
      unsigned code = 0;
      std::from_chars(value.data(), value.data() + value.size(), code);
      res.result(code);
      continue;
    }
    if (!name.empty() && name.front() == ':') continue;
    res.insert(name, value);
  }
}

h2::header_list h2_trailers_to_forward(const h2::header_list& fields) {
  h2::header_list out;
  for (const auto& f : fields)
    if (!not_a_trailer(f.first)) out.push_back(f);
  return out;
}

bool record_renewal_failure(const h2_upstream_call& call, filters::exchange_record& rec) {
  if (call.renewal_error() == errc::ok) return false;
  rec.connect_failed(call.renewal_error());
  rec.refuse(call.renewal_error(), call.renewal_detail());
  return true;
}

asio::awaitable<bool> await_h2_head(h2_upstream_call& call, filters::exchange_record& rec,
                                    const policy::model::limits& limits) {
  const auto deadline =
      std::chrono::steady_clock::now() + core::saturating_steady(limits.response_timeout);
  // (The stream taken anew each time: a refused one is renewed in wait().)
  co_await call.renew_if_refused();
  while (!call.stream->head_done && !call.stream->closed) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= decltype(left)::zero() || !co_await call.wait(left)) {
      if (call.stream->head_done || call.stream->closed) break;
      rec.failed_upstream(errc::upstream_timeout);
      rec.refuse(errc::upstream_timeout, "reading response: no HTTP/2 response head in time");
      call.reset(NGHTTP2_CANCEL);  // answered: the request does not go again
      co_return false;
    }
  }
  const auto& st = *call.stream;
  if (st.head_done) {
    call.answered();
    co_return true;
  }
  call.reset(NGHTTP2_CANCEL);  // answered: the request does not go again
  if (record_renewal_failure(call, rec)) co_return false;
  const auto why = st.oversized ? errc::response_too_large : errc::upstream_error;
  rec.failed_upstream(why);
  rec.refuse(why, st.oversized
                      ? core::str_cat("reading response: head over ", limits.header_bytes, " bytes")
                      : core::str_cat("reading response: HTTP/2 stream closed (",
                                      nghttp2_http2_strerror(st.close_error), ")",
                                      call.conn->error().empty() ? "" : ", ", call.conn->error()));
  co_return false;
}

asio::awaitable<h2_piece> next_h2_piece(h2_upstream_call& call, std::string& piece,
                                        filters::exchange_record& rec,
                                        const policy::model::limits& limits, std::uint64_t& total) {
  auto& st = *call.stream;
  while (st.body.empty() && !st.body_done && !st.closed) {
    if (!co_await call.wait(limits.idle_timeout) && st.body.empty() && !st.body_done) {
      rec.failed_upstream(errc::upstream_timeout);
      rec.detail = "response body: the HTTP/2 origin sent nothing for the idle timeout";
      co_return h2_piece::failed;
    }
  }
  piece.swap(st.body);
  st.body.clear();
  total += piece.size();
  if (total > limits.response_bytes) {
    rec.failed_upstream(errc::response_too_large);
    rec.detail = core::str_cat("response body: over ", limits.response_bytes, " bytes");
    co_return h2_piece::failed;
  }
  if (st.body_done) co_return h2_piece::last;
  if (st.closed) {
    // Reset (or the connection lost) before END_STREAM: the body is incomplete.
    rec.failed_upstream(errc::upstream_error);
    rec.detail = core::str_cat("response body: HTTP/2 stream reset (",
                               nghttp2_http2_strerror(st.close_error), ")");
    co_return h2_piece::failed;
  }
  co_return h2_piece::more;
}

asio::awaitable<bool> ensure_tunnel_upstream(session_context& s, tunnel_context& t,
                                             filters::exchange& ex) {
  const bool want_h2 = upstream_h2_allowed(ex);
  if (want_h2 && t.h2 && t.h2->usable()) co_return true;
  // An upstream already open may be an IP-literal CONNECT's early connection (origin_names),
  // which offered h2: where the origin picked it, it serves only a request that may go over h2.
  const bool open_is_h2 =
      t.upstream && tls::negotiated_alpn(t.upstream->native_handle()) == tls::alpn_h2;
  if (open_is_h2 && !want_h2) t.upstream.reset();
  if (!t.upstream) {
    auto outcome = co_await connect_tls_upstream(s, t, ex, want_h2);
    if (outcome.error != errc::ok) {
      ex.record.connect_failed(outcome.error);
      ex.record.refuse(outcome.error, outcome.detail);
      co_return false;
    }
    ex.record.connect_time = outcome.connect_time;
  }
  if (want_h2 && tls::negotiated_alpn(t.upstream->native_handle()) == tls::alpn_h2) {
    const auto& limits = ex.snapshot->limits();
    if (t.h2) t.h2->close();
    t.h2 = std::make_shared<h2_upstream>(std::move(*t.upstream), t.upstream_text,
                                         h2_client_limits(limits), limits.idle_timeout);
    t.upstream.reset();
    t.h2->start();
  }
  co_return true;
}

}  // namespace airlock::proxy
