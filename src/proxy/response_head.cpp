#include "proxy/response_head.hpp"

#include "core/str_cat.hpp"
#include "net/http_framing.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace airlock::proxy {

bool record_response_failure(filters::exchange_record& rec, const boost::system::error_code& ec,
                             bool draining) {
  namespace http = boost::beast::http;
  if (ec == boost::asio::error::operation_aborted) {
    rec.status = 0;
    if (draining) {
      rec.refuse(core::errc::shutting_down,
                 "cut by the drain: no response within limits.drain_timeout");
    } else {
      rec.detail = "response not delivered: the client's connection ended before the response";
    }
    return false;
  }
  const auto why = ec == boost::beast::error::timeout ? core::errc::upstream_timeout
                   : ec == http::error::body_limit    ? core::errc::response_too_large
                                                      : core::errc::upstream_error;
  rec.failed_upstream(why);
  rec.refuse(why, core::str_cat("reading response: ", ec.message()));
  return true;
}

bool refused_response_framing(filters::exchange_record& rec,
                              const boost::beast::http::response_header<>& res) {
  const auto problem = net::response_framing_problem(res);
  if (problem.empty()) return false;
  rec.failed_upstream(core::errc::upstream_error);
  rec.refuse(core::errc::upstream_error, core::str_cat("origin's response has ", problem));
  return true;
}

}  // namespace airlock::proxy
