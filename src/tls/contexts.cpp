#include "tls/contexts.hpp"

#include "core/str_cat.hpp"
#include "tls/ticket_keys.hpp"

#include <openssl/x509v3.h>

namespace airlock::tls {
namespace {

namespace ssl = boost::asio::ssl;

// Mozilla "intermediate" TLS 1.2 suites: forward secret (ECDHE) AEADs only. Both key types
// are listed so that the same list serves upstreams with RSA certificates.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
// TLS 1.3 suites, AES-128-GCM first (as Mozilla's "intermediate" and "modern" configurations):
// OpenSSL's default puts TLS_AES_256_GCM_SHA384 first, whose key schedule and transcript run on
// SHA-384, about a quarter more work per handshake than SHA-256 for no security the handshake
// has (X25519 and P-256 are 128-bit-secure; AES-128 is not the weak link). AES-256 and
// ChaCha20 stay offered and accepted.
constexpr const char* tls13_suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* groups = "X25519:P-256:P-384";
// ALPN wire format: length-prefixed protocol names (RFC 7301 section 3.1).
constexpr unsigned char alpn_wire[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char session_id_context[] = {'a', 'i', 'r', 'l', 'o', 'c', 'k'};

// The ex_data slot where offer_h2() marks a connection whose rule allows HTTP/2.
int h2_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// Finds `name` in the client's ALPN list (RFC 7301 section 3.1 wire format). False for a
// malformed list too.
bool offered(const unsigned char* in, unsigned int inlen, std::string_view name,
             const unsigned char** out, unsigned char* outlen) {
  unsigned int i = 0;
  while (i < inlen) {
    const unsigned int len = in[i];
    if (len == 0 || len > inlen - i - 1) return false;  // malformed list
    if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == name) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return true;
    }
    i += 1 + len;
  }
  return false;
}

// Picks "h2" (our preference, when offer_h2() allowed it on this connection) or "http/1.1" from
// the client's list. RFC 7301 section 3.2 would have us send a fatal no_application_protocol
// alert when there is no overlap; answering without ALPN instead lets a client that offered
// only "h2" on a rule without it fall back to HTTP/1.1 or close the connection itself.
int select_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  if (SSL_get_ex_data(ssl, h2_index()) != nullptr && offered(in, inlen, alpn_h2, out, outlen))
    return SSL_TLSEXT_ERR_OK;
  return offered(in, inlen, alpn_http11, out, outlen) ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
}

// Settings both sides share. Returns false with the OpenSSL reason in error.
bool common_settings(SSL_CTX* ctx, std::string& error) {
  // No compression: CRIME (CVE-2012-4929). No renegotiation at all (TLS 1.2 only; TLS 1.3
  // has none): it buys nothing here and has a history of DoS and injection bugs
  // (CVE-2009-3555, CVE-2011-1473).
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, tls13_suites) != 1 ||
      SSL_CTX_set1_groups_list(ctx, groups) != 1) {
    error = openssl_error_string();
    return false;
  }
  return true;
}

std::shared_ptr<ssl::context> new_context(ssl::context::method method, std::string& error) {
  try {
    return std::make_shared<ssl::context>(method);
  } catch (const std::exception& e) {  // SSL_CTX_new failed: out of memory or no provider
    error = core::str_cat("cannot create a TLS context: ", e.what());
    return nullptr;
  }
}

}  // namespace

std::shared_ptr<boost::asio::ssl::context> make_server_context(std::string& error) {
  clear_openssl_errors();
  auto ctx = new_context(ssl::context::tls_server, error);
  if (!ctx) return nullptr;
  SSL_CTX* native = ctx->native_handle();
  if (!common_settings(native, error)) {
    error = core::str_cat("server TLS context: ", error);
    return nullptr;
  }
  SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Resumption: the session cache serves TLS 1.2 session ids, tickets serve TLS 1.2 and 1.3
  // (stateless; keys rotated, ticket_keys.hpp). Clients key their sessions by host, so a
  // session is only offered back for the host whose leaf it was made with.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  // One TLS 1.3 ticket per handshake, not OpenSSL's two: each costs a session copy, its
  // encoding and encryption (about 160K instructions, 3% of a new intercepted connection). A
  // ticket is for one use (RFC 8446 appendix C.4) and a resumed handshake brings a new one, so
  // a client that reconnects in sequence always has one; two only serve a second connection
  // opened in parallel, which then makes a full handshake. None is sent as the handshake ends:
  // the proxy queues it with the first answer (queue_session_ticket).
  SSL_CTX_set_num_tickets(native, 0);
  // Ticket keys rotated hourly rather than OpenSSL's one key for the context's life.
  if (!ticket_keys::install(native, std::make_unique<ticket_keys>())) {
    error = core::str_cat("server TLS context: cannot install the session ticket keys: ",
                          openssl_error_string());
    return nullptr;
  }
  if (SSL_CTX_set_session_id_context(native, session_id_context, sizeof session_id_context) != 1) {
    error = core::str_cat("server TLS context: ", openssl_error_string());
    return nullptr;
  }
  SSL_CTX_set_verify(native, SSL_VERIFY_NONE, nullptr);  // clients have no certificates
  SSL_CTX_set_alpn_select_cb(native, &select_alpn, nullptr);
  return ctx;
}

bool use_leaf(SSL* ssl, const leaf_certificate& leaf, std::string& error) {
  clear_openssl_errors();
  // SSL_use_* and SSL_add1_chain_cert take their own references.
  if (SSL_use_certificate(ssl, leaf.cert()) != 1 || SSL_use_PrivateKey(ssl, leaf.key()) != 1 ||
      (leaf.chain_cert() && SSL_add1_chain_cert(ssl, leaf.chain_cert()) != 1)) {
    error = core::str_cat("cannot install the leaf for ", leaf.name().text, ": ",
                          openssl_error_string());
    return false;
  }
  return true;
}

std::shared_ptr<boost::asio::ssl::context> make_client_context(
    const std::filesystem::path& upstream_ca_path, std::string& error) {
  clear_openssl_errors();
  auto ctx = new_context(ssl::context::tls_client, error);
  if (!ctx) return nullptr;
  SSL_CTX* native = ctx->native_handle();
  if (!common_settings(native, error)) {
    error = core::str_cat("upstream TLS context: ", error);
    return nullptr;
  }
  boost::system::error_code ec;
  if (upstream_ca_path.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) {
      error =
          core::str_cat("upstream TLS context: cannot load the system trust store: ", ec.message());
      return nullptr;
    }
  } else {
    ctx->load_verify_file(upstream_ca_path.string(), ec);
    if (ec) {
      error = core::str_cat("upstream CA bundle ", upstream_ca_path.string(), ": cannot load (",
                            ec.message(), ")");
      return nullptr;
    }
  }
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  // SSL_CTX_set_alpn_protos returns 0 on success (unlike most of OpenSSL).
  if (SSL_CTX_set_alpn_protos(native, alpn_wire, sizeof alpn_wire) != 0) {
    error = core::str_cat("upstream TLS context: cannot set ALPN: ", openssl_error_string());
    return nullptr;
  }
  return ctx;
}

bool set_upstream_host(SSL* ssl, std::string_view host, std::string& error) {
  auto name = parse_leaf_name(host);
  if (!name) {
    error = core::str_cat("not a host name or IP literal: '", host.substr(0, 80), "'");
    return false;
  }
  clear_openssl_errors();
  bool ok = false;
  if (name->is_ip) {
    ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name->text.c_str()) == 1;
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = SSL_set_tlsext_host_name(ssl, name->text.c_str()) == 1 &&
         SSL_set1_host(ssl, name->text.c_str()) == 1;
  }
  if (!ok) {
    error =
        core::str_cat("cannot set the upstream name ", name->text, ": ", openssl_error_string());
    return false;
  }
  // Fail closed even with a context that was made without verification.
  SSL_set_verify(ssl, SSL_VERIFY_PEER, SSL_get_verify_callback(ssl));
  return true;
}

std::string verify_failure_reason(const SSL* ssl) {
  const long result = SSL_get_verify_result(ssl);
  if (result == X509_V_OK) return {};
  return X509_verify_cert_error_string(result);
}

std::string handshake_failure_reason(const SSL* ssl, const boost::system::error_code& ec) {
  if (!ec) return {};
  if (std::string reason = verify_failure_reason(ssl); !reason.empty()) {
    return core::str_cat("certificate verify failed: ", reason);
  }
  if (ec == boost::asio::ssl::error::stream_truncated) return "connection closed during handshake";
  return ec.message();
}

void offer_h2(SSL* ssl, bool allow) {
  // Any non-null pointer marks the connection; nothing is owned.
  static char mark;
  SSL_set_ex_data(ssl, h2_index(), allow ? &mark : nullptr);
}

bool queue_session_ticket(SSL* ssl) {
  // SSL_new_session_ticket(3): sent with the next write (or read) once the handshake is done.
  return SSL_version(ssl) == TLS1_3_VERSION && SSL_new_session_ticket(ssl) == 1;
}

bool offer_upstream_h2(SSL* ssl) {
  // RFC 7301 section 3.1 wire format, our preference first. SSL_set_alpn_protos returns 0 on
  // success.
  static constexpr unsigned char both[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  return SSL_set_alpn_protos(ssl, both, sizeof both) == 0;
}

std::string_view negotiated_alpn(const SSL* ssl) {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &data, &len);
  return data == nullptr ? std::string_view()
                         : std::string_view(reinterpret_cast<const char*>(data), len);
}

}  // namespace airlock::tls
