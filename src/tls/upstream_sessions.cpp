#include "tls/upstream_sessions.hpp"

namespace airlock::tls {
namespace {

// The cache an SSL_CTX hands its sessions to (SSL_CTX ex_data, one index for the process).
int context_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

upstream_sessions::upstream_sessions(std::size_t capacity)
    : capacity_(capacity == 0 ? 1 : capacity) {}

upstream_sessions::~upstream_sessions() {
  for (auto& [name, e] : sessions_)
    SSL_SESSION_free(e.session);
}

bool upstream_sessions::attach(SSL_CTX* ctx) {
  if (context_index() < 0 || SSL_CTX_set_ex_data(ctx, context_index(), this) != 1) return false;
  // Client sessions go to our callback only; OpenSSL's internal cache is for servers.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &upstream_sessions::on_new_session);
  return true;
}

bool upstream_sessions::resume(SSL* ssl) {
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (!name || !*name) return false;
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return false;
  if (!SSL_SESSION_is_resumable(it->second.session)) return false;
  return SSL_set_session(ssl, it->second.session) == 1;
}

int upstream_sessions::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self =
      static_cast<upstream_sessions*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), context_index()));
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  // Only what a verified handshake for this very name produced is kept.
  if (!self || !name || !*name || SSL_get_verify_result(ssl) != X509_V_OK) return 0;
  // A copy: `session` stays the connection's own, and OpenSSL marks that one not resumable
  // when the connection is freed without a close_notify sent (ssl_clear_bad_session), which is
  // how a tunnel's upstream usually ends (the origin closes, or the client does). TLS 1.1 and
  // later allow resuming such a session (RFC 5246 section 7.2.1; RFC 8446 has no such rule).
  SSL_SESSION* copy = SSL_SESSION_dup(session);
  if (!copy) return 0;
  self->store(name, copy);
  return 0;  // OpenSSL keeps (and frees) its own reference
}

void upstream_sessions::store(const std::string& name, SSL_SESSION* session) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(name);
  if (it != sessions_.end()) {
    SSL_SESSION_free(it->second.session);
    order_.erase(it->second.order);
    sessions_.erase(it);
  }
  if (sessions_.size() >= capacity_) {
    auto oldest = sessions_.find(order_.back());
    SSL_SESSION_free(oldest->second.session);
    sessions_.erase(oldest);
    order_.pop_back();
  }
  order_.push_front(name);
  sessions_.emplace(name, entry{session, order_.begin()});
}

std::size_t upstream_sessions::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace airlock::tls
