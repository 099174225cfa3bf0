#include "launcher/capture_protocol.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace airlock::launcher::capture {
using core::iequals;
namespace {

using core::str_cat;

constexpr std::size_t max_method = 32;
constexpr std::size_t max_line = 8 * 1024;    // chunk-size and trailer lines
constexpr std::size_t max_reply = 16 * 1024;  // the proxy's CONNECT answer head

// RFC 9110 section 5.6.2.
bool tchar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

kind classify(std::string_view first, bool eof) noexcept {
  // Empty lines before a request line are allowed (RFC 9112 section 2.2), a few of them.
  for (std::size_t lines = 0; first.starts_with("\r\n"); ++lines) {
    if (lines == max_empty_lines) return kind::other;
    first.remove_prefix(2);
  }
  if (first.empty()) return eof ? kind::other : kind::need_more;
  if (static_cast<unsigned char>(first[0]) == 0x16) return kind::tls;
  // method SP (origin-form "/", asterisk-form "*", or absolute-form "scheme:"). Methods are
  // upper-case letters and '-' in practice (RFC 9110, WebDAV, SSDP's M-SEARCH); demanding that
  // keeps other line-based protocols ("SSH-2.0-OpenSSH_9.2p1 Debian") out of the HTTP path.
  std::size_t i = 0;
  while (i < first.size() && i <= max_method &&
         ((first[i] >= 'A' && first[i] <= 'Z') || first[i] == '-' || first[i] == '_'))
    ++i;
  if (i == first.size()) return (eof || i > max_method) ? kind::other : kind::need_more;
  if (i == 0 || i > max_method || first[i] != ' ') return kind::other;
  if (i + 1 == first.size()) return eof ? kind::other : kind::need_more;
  const char t = first[i + 1];
  if (t == '/' || t == '*' || std::isalpha(static_cast<unsigned char>(t))) return kind::http;
  return kind::other;
}

std::string authority(std::string_view host, std::uint16_t port) {
  if (host.find(':') != std::string_view::npos) return str_cat('[', host, "]:", port);
  return str_cat(host, ':', port);
}

std::string connect_request(std::string_view authority) {
  return str_cat("CONNECT ", authority, " HTTP/1.1\r\nHost: ", authority, "\r\n\r\n");
}

connect_reply parse_connect_reply(std::string_view data) {
  connect_reply r;
  const auto end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (data.size() > max_reply) {
      r.result = connect_reply::state::refused;
      r.status_line = "(an answer head larger than 16 KiB)";
    }
    return r;
  }
  const std::string_view line = data.substr(0, data.find("\r\n"));
  r.status_line = std::string(line);
  // "HTTP/1.1 200 ..." (RFC 9112 section 4): any 2xx establishes the tunnel (RFC 9110
  // section 9.3.6).
  if (line.size() >= 12 && line.starts_with("HTTP/1.") && line[8] == ' ' && line[9] == '2' &&
      std::isdigit(static_cast<unsigned char>(line[10])) &&
      std::isdigit(static_cast<unsigned char>(line[11])) &&
      (line.size() == 12 || line[12] == ' ')) {
    r.result = connect_reply::state::established;
    r.head_size = end + 4;
    r.status_line.clear();
  } else {
    r.result = connect_reply::state::refused;
  }
  return r;
}

http_rewriter::http_rewriter(std::string authority, std::size_t max_head)
    : authority_(std::move(authority)), max_head_(max_head) {}

void http_rewriter::give_up(std::string& out) {
  out += buf_;
  buf_.clear();
  state_ = state::passthrough;
}

void http_rewriter::end_of_message() {
  state_ = upgrade_ ? state::passthrough : state::head;
  buf_.clear();
}

void http_rewriter::feed(std::string_view in, std::string& out) {
  while (!in.empty()) {
    switch (state_) {
      case state::passthrough:
        out.append(in);
        return;

      case state::head: {
        const std::size_t old = buf_.size();
        buf_.append(in.substr(0, std::min(in.size(), max_head_ + 1 - old)));
        const auto end = buf_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
        if (end == std::string::npos) {
          in.remove_prefix(buf_.size() - old);
          if (buf_.size() > max_head_) give_up(out);
          continue;
        }
        in.remove_prefix(end + 4 - old);
        buf_.resize(end + 4);
        on_head(out);
        continue;
      }

      case state::body: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) end_of_message();
        continue;
      }

      case state::chunk_data: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
          state_ = state::chunk_end;
          remaining_ = 2;  // the CRLF after the data
        }
        continue;
      }

      case state::chunk_end: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = state::chunk_size;
        continue;
      }

      case state::chunk_size:
      case state::trailers: {
        const auto nl = in.find('\n');
        const std::size_t take = nl == std::string_view::npos ? in.size() : nl + 1;
        buf_.append(in.substr(0, take));
        in.remove_prefix(take);
        if (buf_.size() > max_line) {
          give_up(out);
          continue;
        }
        if (nl == std::string_view::npos) continue;
        if (!on_line(out)) give_up(out);
        continue;
      }
    }
  }
}

bool http_rewriter::on_line(std::string& out) {
  std::string_view line = buf_;
  if (!line.ends_with("\r\n")) return false;  // a bare LF: not what the proxy will accept
  line.remove_suffix(2);
  if (state_ == state::trailers) {
    out += buf_;
    buf_.clear();
    if (line.empty()) end_of_message();
    return true;
  }
  // chunk-size [ chunk-ext ] CRLF (RFC 9112 section 7.1)
  std::size_t digits = 0;
  std::uint64_t size = 0;
  while (digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits]))) {
    if (digits == 15) return false;  // would overflow; nobody sends a chunk that large
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(line[digits])));
    size = size * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    ++digits;
  }
  if (digits == 0) return false;
  const std::string_view ext = line.substr(digits);
  if (!ext.empty() && ext[0] != ';' && ext[0] != ' ' && ext[0] != '\t') return false;
  out += buf_;
  buf_.clear();
  if (size == 0) {
    state_ = state::trailers;
  } else {
    state_ = state::chunk_data;
    remaining_ = size;
  }
  return true;
}

void http_rewriter::on_head(std::string& out) {
  // buf_ holds exactly one head, ending in CRLF CRLF, perhaps after empty lines, which are
  // ignored (RFC 9112 section 2.2).
  std::string_view head = buf_;
  while (head.starts_with("\r\n"))
    head.remove_prefix(2);
  if (head.empty()) {
    buf_.clear();
    return;
  }
  const auto line_end = head.find("\r\n");
  const std::string_view request_line = head.substr(0, line_end);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return give_up(out);
  const std::string_view method = request_line.substr(0, sp1);
  const std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = request_line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), tchar) || target.empty() ||
      (version != "HTTP/1.1" && version != "HTTP/1.0"))
    return give_up(out);
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return give_up(out);
  }
  // A CONNECT is already a request for a proxy; after it come the tunnel's bytes.
  if (method == "CONNECT") return give_up(out);

  std::optional<std::uint64_t> length;
  bool chunked = false, transfer_encoding = false;
  upgrade_ = false;
  std::size_t pos = line_end + 2;
  while (pos < head.size() - 2) {
    const auto eol = head.find("\r\n", pos);
    const std::string_view field = head.substr(pos, eol - pos);
    pos = eol + 2;
    // obs-fold (RFC 9112 section 5.2) could hide a framing header: not ours to untangle.
    if (field.empty() || field[0] == ' ' || field[0] == '\t') return give_up(out);
    const auto colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return give_up(out);
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = core::trim_ows(field.substr(colon + 1));
    if (iequals(name, "content-length")) {
      if (!all_digits(value)) return give_up(out);
      const std::uint64_t n = std::stoull(std::string(value));
      if (length && *length != n) return give_up(out);  // RFC 9112 section 6.3, item 5
      length = n;
    } else if (iequals(name, "transfer-encoding")) {
      transfer_encoding = true;
      // Chunked must be the last coding (RFC 9112 section 6.3, item 4); a later field
      // replaces the verdict of an earlier one, as the lists concatenate.
      const auto comma = value.rfind(',');
      chunked =
          iequals(core::trim_ows(comma == std::string_view::npos ? value : value.substr(comma + 1)),
                  "chunked");
    } else if (iequals(name, "upgrade")) {
      upgrade_ = true;
    }
  }
  // A coding other than chunked last leaves the length unknowable: the proxy answers 400.
  if (transfer_encoding && !chunked) return give_up(out);

  std::string rewritten;
  if (target[0] == '/') {
    rewritten = str_cat("http://", authority_, target);
  } else if (target == "*") {
    rewritten = str_cat("http://", authority_);  // OPTIONS * (RFC 9112 section 3.2.4)
  } else {
    rewritten = std::string(target);  // already absolute: a proxy request like any other
  }
  out += str_cat(method, ' ', rewritten, ' ', version);
  out.append(head.substr(line_end));
  ++requests_;
  buf_.clear();
  if (chunked) {
    state_ = state::chunk_size;
  } else if (length && *length > 0) {
    state_ = state::body;
    remaining_ = *length;
  } else {
    end_of_message();
  }
}

void http_rewriter::finish(std::string& out) {
  if (state_ == state::passthrough) return;
  out += buf_;
  buf_.clear();
  state_ = state::passthrough;
}

}  // namespace airlock::launcher::capture
