#pragma once
// The two TLS contexts of an intercepted CONNECT and the per-connection set-up each side
// needs:
//   client --TLS--> proxy (server context, a minted leaf per connection)
//   proxy --TLS--> upstream (client context, the upstream's real certificate verified)
//
// Usage, per intercepted connection (the CONNECT host is known before either handshake, so
// no SNI callback is needed):
//   ssl::stream<tcp::socket> down(std::move(client_socket), *server_ctx);
//   use_leaf(down.native_handle(), *cache.get(host, err), err);   then async_handshake(server)
//   ssl::stream<tcp::socket> up(std::move(upstream_socket), *client_ctx);
//   set_upstream_host(up.native_handle(), host, err);              then async_handshake(client)
//   on failure: handshake_failure_reason(up.native_handle(), ec)
//
// Thread safety: the factories are thread safe. A context may be shared by any number of
// streams on any threads once made (do not change its settings afterwards). use_leaf and
// set_upstream_host touch only the SSL* they are given: call them from the thread that owns
// that stream, before its handshake.

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/system/error_code.hpp>

#include <openssl/ssl.h>

#include "tls/leaf_minter.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::tls {

// The application protocols the proxy speaks to clients (RFC 7301 ALPN identifiers).
inline constexpr std::string_view alpn_http11 = "http/1.1";
inline constexpr std::string_view alpn_h2 = "h2";

// Client-facing side: TLS 1.2 minimum; TLS 1.2 suites limited to ECDHE with AES-GCM or
// ChaCha20-Poly1305 (TLS 1.3: OpenSSL's three suites, AES-128-GCM first); no compression (CRIME);
// no renegotiation; server-side session cache and session tickets for resumption; ALPN selects "h2"
// on a connection offer_h2() allowed it on, else "http/1.1" when the client offers it, and
// otherwise nothing (a client offering only "h2" gets no ALPN rather than a no_application_protocol
// alert). No certificate: each connection gets its leaf from use_leaf. Returns null and sets error
// on failure.
std::shared_ptr<boost::asio::ssl::context> make_server_context(std::string& error);

// Presents `leaf` (its certificate, key, and its chain_cert when there is one) on this one
// connection. Call before the server handshake. The SSL holds its own references, so the
// leaf may be released afterwards.
bool use_leaf(SSL* ssl, const leaf_certificate& leaf, std::string& error);

// Upstream side: TLS 1.2 minimum, the same TLS 1.2 suites, peer verification against
// upstream_ca_path (a PEM bundle) or, when it is empty, the system trust store; offers ALPN
// "http/1.1". Returns null and sets error (naming the bundle) on failure.
std::shared_ptr<boost::asio::ssl::context> make_client_context(
    const std::filesystem::path& upstream_ca_path, std::string& error);

// Prepares one upstream connection to `host` (DNS name or IP literal, as the CONNECT named
// it): sends SNI for a DNS name (RFC 6066 section 3 does not allow IP literals there), and
// makes the handshake fail unless the certificate matches the name (no partial wildcards,
// RFC 6125 section 6.4.3) or the IP address (iPAddress subjectAltName). Also forces peer
// verification on, whatever the context says. Call before the client handshake.
bool set_upstream_host(SSL* ssl, std::string_view host, std::string& error);

// Why the peer's certificate was rejected ("certificate has expired", "hostname mismatch",
// ...), or "" when verification passed or did not run.
std::string verify_failure_reason(const SSL* ssl);
// A short reason for a failed handshake: the verification failure when there was one,
// otherwise the TLS error. "" when ec is not an error.
std::string handshake_failure_reason(const SSL* ssl, const boost::system::error_code& ec);

// Whether the server handshake of this one connection may pick "h2" (the rule allows HTTP/2).
// Call before the handshake; off by default.
void offer_h2(SSL* ssl, bool allow);

// Upstream side: offers "h2" before "http/1.1" on this one connection (the context offers
// "http/1.1" alone), so an origin that speaks HTTP/2 may pick it. Call before the handshake.
bool offer_upstream_h2(SSL* ssl);

// Server side, TLS 1.3: queues this connection's one session ticket (RFC 8446 section 4.6.1)
// to leave with the next record written, the first answer, rather than in a write of its own
// as the handshake ends: one send (and one wake-up of the client) less per new connection.
// OpenSSL also sends it on the next read, so call it when an answer is next. False (nothing
// queued) on TLS 1.2, whose ticket comes inside the handshake.
bool queue_session_ticket(SSL* ssl);

// The ALPN protocol agreed on this connection, "" when none. Points into ssl's memory: valid
// while ssl lives.
std::string_view negotiated_alpn(const SSL* ssl);

}  // namespace airlock::tls
