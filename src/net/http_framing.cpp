#include "net/http_framing.hpp"

#include "core/ascii.hpp"

namespace airlock::net {
namespace http = boost::beast::http;

std::string_view framing_problem(const http::request_header<>& req) {
  std::size_t content_lengths = 0, transfer_encodings = 0, hosts = 0;
  for (const auto& f : req) {
    if (f.name() == http::field::content_length)
      ++content_lengths;
    else if (f.name() == http::field::transfer_encoding)
      ++transfer_encodings;
    else if (f.name() == http::field::host)
      ++hosts;
  }
  if (content_lengths > 1) return "more than one Content-Length";
  if (hosts > 1) return "more than one Host";
  if (transfer_encodings > 0) {
    if (content_lengths > 0) return "both Content-Length and Transfer-Encoding";
    if (req.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
    if (transfer_encodings > 1 ||
        !core::iequals(core::trim_ows(req[http::field::transfer_encoding]), "chunked"))
      return "unsupported Transfer-Encoding (only chunked)";
  }
  return {};
}

}  // namespace airlock::net
