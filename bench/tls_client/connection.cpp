#include "connection.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

namespace airlock::bench {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_head = 64 * 1024;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
    v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  return v;
}

struct head_info {
  int status = 0;
  long long content_length = -1;
  bool close = false;
  bool chunked = false;
};

// Status line and the few headers we need (RFC 9112 sections 4 and 6).
bool parse_head(std::string_view head, head_info& out) {
  auto eol = head.find("\r\n");
  auto line = head.substr(0, eol);
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1.") return false;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, out.status);
  if (ec != std::errc() || p != line.data() + 12) return false;
  while (eol != std::string_view::npos && eol + 2 < head.size()) {
    auto start = eol + 2;
    eol = head.find("\r\n", start);
    auto field = head.substr(start, eol == std::string_view::npos ? eol : eol - start);
    auto colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    auto name = field.substr(0, colon);
    auto value = trim(field.substr(colon + 1));
    if (iequals(name, "content-length")) {
      long long n = 0;
      auto [q, e] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (e != std::errc() || q != value.data() + value.size() || n < 0) return false;
      out.content_length = n;
    } else if (iequals(name, "connection")) {
      out.close = iequals(value, "close");
    } else if (iequals(name, "transfer-encoding")) {
      out.chunked = true;
    }
  }
  return true;
}

failure io_failure(const boost::system::error_code& ec) {
  return ec == asio::error::operation_aborted ? failure::timeout : failure::io;
}

}  // namespace

const char* failure_name(failure f) {
  switch (f) {
    case failure::none:
      return "none";
    case failure::connect:
      return "connect";
    case failure::proxy:
      return "proxy";
    case failure::tls:
      return "tls";
    case failure::io:
      return "io";
    case failure::status:
      return "status";
    case failure::body:
      return "body";
    case failure::timeout:
      return "timeout";
  }
  return "?";
}

bool make_client_context(ssl::context& ctx, const std::string& cafile, std::string& error) {
  boost::system::error_code ec;
  ctx.set_verify_mode(ssl::verify_peer, ec);
  if (!ec) ctx.load_verify_file(cafile, ec);
  if (ec) {
    error = "cannot load " + cafile + ": " + ec.message();
    return false;
  }
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // No resumption: every connection pays for a full handshake, as a new client would.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
  static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (SSL_CTX_set_alpn_protos(native, alpn, sizeof alpn) != 0) {
    error = "cannot set ALPN";
    return false;
  }
  return true;
}

asio::awaitable<failure> open_connection(tls_stream& s, const endpoint_spec& spec,
                                         std::string& detail, open_times* times) {
  open_times t;
  t.start = steady::now();
  auto& sock = s.next_layer();
  auto [cec] = co_await sock.async_connect(spec.connect_to, use_tuple);
  if (cec) {
    detail = "connect: " + cec.message();
    co_return cec == asio::error::operation_aborted ? failure::timeout : failure::connect;
  }
  sock.set_option(tcp::no_delay(true));
  t.tcp_done = steady::now();
  std::string authority = spec.host + ":" + std::to_string(spec.port);
  if (spec.via_proxy) {
    std::string req = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
    auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(req), use_tuple);
    if (wec) {
      detail = "CONNECT write: " + wec.message();
      co_return io_failure(wec);
    }
    std::string head;
    auto [rec, n] = co_await asio::async_read_until(sock, asio::dynamic_buffer(head, max_head),
                                                    "\r\n\r\n", use_tuple);
    if (rec) {
      detail = "CONNECT reply: " + rec.message();
      co_return io_failure(rec);
    }
    head_info info;
    if (!parse_head(std::string_view(head).substr(0, n), info) || info.status / 100 != 2) {
      detail = "CONNECT answered: " + head.substr(0, head.find("\r\n"));
      co_return failure::proxy;
    }
    if (head.size() != n) {
      detail = "bytes after the CONNECT reply, before any ClientHello";
      co_return failure::proxy;
    }
  }
  t.tunnel_done = steady::now();
  SSL* ssl = s.native_handle();
  boost::system::error_code aec;
  auto ip = asio::ip::make_address(spec.host, aec);
  if (aec) {
    // A DNS name: SNI (RFC 6066 section 3) and the certificate must name it.
    SSL_set_tlsext_host_name(ssl, spec.host.c_str());
    SSL_set1_host(ssl, spec.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip.to_string().c_str());
  }
  auto [hec] = co_await s.async_handshake(ssl::stream_base::client, use_tuple);
  if (hec) {
    detail = "TLS handshake: " + hec.message();
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) detail += std::string(" (") + X509_verify_cert_error_string(v) + ")";
    co_return hec == asio::error::operation_aborted ? failure::timeout : failure::tls;
  }
  t.handshake_done = steady::now();
  if (times) *times = t;
  co_return failure::none;
}

asio::awaitable<exchange_result> exchange(tls_stream& s, std::string& buffer,
                                          const std::string& request, std::size_t expect_body,
                                          std::string& detail) {
  exchange_result out;
  auto [wec, wn] = co_await asio::async_write(s, asio::buffer(request), use_tuple);
  if (wec) {
    detail = "write: " + wec.message();
    out.fail = io_failure(wec);
    co_return out;
  }
  auto [rec, head_len] = co_await asio::async_read_until(
      s, asio::dynamic_buffer(buffer, max_head + (16 << 20)), "\r\n\r\n", use_tuple);
  if (rec) {
    detail = "read head: " + rec.message();
    out.fail = io_failure(rec);
    co_return out;
  }
  head_info info;
  if (!parse_head(std::string_view(buffer).substr(0, head_len), info)) {
    detail = "unparsable response head";
    out.fail = failure::io;
    co_return out;
  }
  if (info.status != 200) {
    detail = "response: " + buffer.substr(0, buffer.find("\r\n"));
    out.fail = failure::status;
    co_return out;
  }
  if (info.chunked || info.content_length < 0) {
    detail = "response without Content-Length";
    out.fail = failure::body;
    co_return out;
  }
  auto length = static_cast<std::size_t>(info.content_length);
  if (length < expect_body) {
    detail =
        "body of " + std::to_string(length) + " bytes, expected " + std::to_string(expect_body);
    out.fail = failure::body;
    co_return out;
  }
  std::size_t have = buffer.size() - head_len;
  if (have < length) {
    auto [bec, bn] = co_await asio::async_read(s, asio::dynamic_buffer(buffer, head_len + length),
                                               asio::transfer_exactly(length - have), use_tuple);
    if (bec) {
      detail = "read body: " + bec.message();
      out.fail = io_failure(bec);
      co_return out;
    }
  }
  buffer.erase(0, head_len + length);
  out.bytes = head_len + length;
  out.server_closes = info.close;
  co_return out;
}

std::string make_request(const endpoint_spec& spec, const std::string& path, bool close) {
  std::string r =
      "GET " + path + " HTTP/1.1\r\nHost: " + spec.host + ":" + std::to_string(spec.port) + "\r\n";
  if (close) r += "Connection: close\r\n";
  r += "\r\n";
  return r;
}

}  // namespace airlock::bench
