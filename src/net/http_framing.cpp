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

std::string_view response_framing_problem(const http::response_header<>& res) {
  std::size_t transfer_encodings = 0;
  for (const auto& f : res)
    if (f.name() == http::field::transfer_encoding) ++transfer_encodings;
  if (transfer_encodings == 0) return {};
  if (transfer_encodings > 1 ||
      !core::iequals(core::trim_ows(res[http::field::transfer_encoding]), "chunked"))
    return "a transfer coding other than chunked";
  return {};
}

}  // namespace airlock::net

namespace airlock::net {
namespace {

// tchar (RFC 9110 section 5.6.2).
bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

request_line_status classify_request_line(std::string_view bytes, std::size_t max_line) {
  return request_line_scanner(max_line).scan(bytes);
}

request_line_status request_line_scanner::scan(std::string_view bytes) noexcept {
  using enum request_line_status;
  if (verdict_ != need_more) return verdict_;
  // (Less than before breaks the contract: fail closed.)
  if (bytes.size() < scanned_) return verdict_ = other;
  // method SP request-target SP "HTTP/1." DIGIT CRLF, checked one byte at a time so that any
  // prefix of a valid line is need_more and the first wrong byte is `other`.
  static constexpr std::string_view version = "HTTP/1.";
  for (; scanned_ < bytes.size(); ++scanned_) {
    if (scanned_ >= max_line_) return verdict_ = other;
    const char c = bytes[scanned_];
    switch (at_) {
      case part::method:
        if (c == ' ' && part_len_ > 0) {
          at_ = part::target;
          part_len_ = 0;
        } else if (is_tchar(c)) {
          ++part_len_;
        } else {
          return verdict_ = other;
        }
        break;
      case part::target:
        if (c == ' ' && part_len_ > 0) {
          at_ = part::version;
          part_len_ = 0;
        } else if (c > 0x20 && c < 0x7f) {
          ++part_len_;
        } else {
          return verdict_ = other;
        }
        break;
      case part::version:
        if (part_len_ < version.size()) {
          if (c != version[part_len_]) return verdict_ = other;
          ++part_len_;
        } else {
          if (c != '0' && c != '1') return verdict_ = other;
          at_ = part::cr;
        }
        break;
      case part::cr:
        if (c != '\r') return verdict_ = other;
        at_ = part::lf;
        break;
      case part::lf:
        return verdict_ = c == '\n' ? http1 : other;
    }
  }
  if (scanned_ >= max_line_) verdict_ = other;
  return verdict_;
}

bool chunk_put_must_wait(bool chunked, std::string_view unparsed) noexcept {
  return chunked && !unparsed.empty() && unparsed.size() < 5 && unparsed.front() == '0';
}

}  // namespace airlock::net
