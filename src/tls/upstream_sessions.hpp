#pragma once
// Client-side TLS session resumption towards origins. Each intercepted tunnel opens its own
// TLS connection upstream; without resumption every one of them pays a full handshake
// (certificate chain, signature verification) although the origin is the same. This keeps
// the last session ticket each origin name gave us and offers it on the next connection to
// that name.
//
// A session is only offered for the server name it was made with, and only sessions from
// handshakes that verified the origin's certificate for that name are kept, so resuming never
// skips a check the full handshake would have made. IP-literal targets (no SNI) are not
// resumed.
//
// Thread safety: resume() and the new-session callback may run on any thread (a mutex guards
// the map; they run once per upstream connection, never per byte).

#include <openssl/ssl.h>

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

namespace airlock::tls {

class upstream_sessions {
 public:
  explicit upstream_sessions(std::size_t capacity = 1024);
  ~upstream_sessions();
  upstream_sessions(const upstream_sessions&) = delete;
  upstream_sessions& operator=(const upstream_sessions&) = delete;

  // Makes ctx hand new client sessions to this cache (which must outlive ctx's connections).
  // False when OpenSSL refuses.
  bool attach(SSL_CTX* ctx);
  // Before the handshake (after the server name is set): offers the cached session for it.
  // True when one was offered.
  bool resume(SSL* ssl);

  std::size_t size() const;

 private:
  static int on_new_session(SSL* ssl, SSL_SESSION* session);
  void store(const std::string& name, SSL_SESSION* session);

  struct entry {
    SSL_SESSION* session = nullptr;
    std::list<std::string>::iterator order;
  };
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> sessions_;
  std::list<std::string> order_;  // most recently stored first
};

}  // namespace airlock::tls
