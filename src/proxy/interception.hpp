#pragma once
// Everything TLS interception needs, built from the policy's `tls` section: the CA's leaf
// cache and the two TLS contexts. Rebuilt on reload only when the files it was built from
// change, so the leaf cache stays warm across ordinary policy edits.
//
// Thread safety: immutable after create() except the leaf cache, which is thread safe.

#include "policy/model.hpp"

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

namespace airlock::telemetry {
class metrics;
}
namespace airlock::tls {
class leaf_cache;
class upstream_sessions;
}  // namespace airlock::tls

namespace airlock::proxy {

struct interception {
  // Declared before the contexts: the upstream context hands it sessions until it is gone.
  std::shared_ptr<tls::upstream_sessions> upstream_sessions;
  std::shared_ptr<boost::asio::ssl::context> server_context;  // client-facing
  std::shared_ptr<boost::asio::ssl::context> client_context;  // upstream-facing
  std::shared_ptr<tls::leaf_cache> leaves;
  policy::model::tls files;        // what this was built from
  std::string upstream_ca_digest;  // SHA-256 of the upstream_ca file as it was read (if named)

  // Null with `error` set when the CA cannot be loaded or a context cannot be made.
  static std::shared_ptr<const interception> create(const policy::model::tls& config,
                                                    telemetry::metrics* metrics,
                                                    std::string& error);
  // True when `config` names the same files and the CA certificate file still holds the
  // certificate this was built with: a CA rewritten in place (same name, new content, e.g.
  // `airlock ca init --force` or a mounted Secret updated) is a different CA. Reads the
  // certificate file (not the key: a new key comes with a new certificate), and the
  // upstream_ca bundle, compared the same way.
  bool built_from(const policy::model::tls& config) const;
};

}  // namespace airlock::proxy
