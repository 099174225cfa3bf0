#include "proxy/interception.hpp"

#include "core/log.hpp"
#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "policy/token.hpp"
#include "telemetry/metrics.hpp"
#include "tls/ca.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_cache.hpp"
#include "tls/leaf_minter.hpp"
#include "tls/upstream_sessions.hpp"

namespace airlock::proxy {
namespace {

// SHA-256 of a file's bytes; empty for no file (or one that cannot be read, or is not a
// regular file: the rebuild then reports why). Never blocks on a FIFO nor reads a device.
std::string file_digest(const std::string& path) {
  if (path.empty()) return {};
  constexpr std::size_t max_bundle_bytes = 16u << 20;
  const auto read = core::read_regular_file(path, max_bundle_bytes);
  if (read.problem != core::file_problem::none) return {};
  return policy::sha256_hex(read.bytes);
}

}  // namespace

std::shared_ptr<const interception> interception::create(const policy::model::tls& config,
                                                         telemetry::metrics* metrics,
                                                         std::string& error) {
  auto loaded = tls::certificate_authority::load(config.ca_cert, config.ca_key);
  if (!loaded.ca) {
    error = loaded.error;
    return nullptr;
  }
  for (const auto& w : loaded.warnings)
    AIRLOCK_LOG(warn, "tls", w);
  auto minter = tls::leaf_minter::create(loaded.ca, error);
  if (!minter) return nullptr;
  tls::leaf_cache_options options;
  if (metrics) {
    options.on_event = [metrics](tls::leaf_cache_event e) {
      if (e == tls::leaf_cache_event::hit)
        metrics->leaf_cache_hit();
      else if (e == tls::leaf_cache_event::mint)
        metrics->leaf_minted();
    };
  }
  auto result = std::make_shared<interception>();
  result->leaves = std::make_shared<tls::leaf_cache>(minter, std::move(options));
  result->server_context = tls::make_server_context(error);
  if (!result->server_context) return nullptr;
  result->client_context = tls::make_client_context(config.upstream_ca, error);
  if (!result->client_context) return nullptr;
  result->upstream_sessions = std::make_shared<tls::upstream_sessions>();
  if (!result->upstream_sessions->attach(result->client_context->native_handle())) {
    error = "upstream TLS context: cannot install the session cache";
    return nullptr;
  }
  result->files = config;
  result->upstream_ca_digest = file_digest(config.upstream_ca);
  AIRLOCK_LOG(info, "tls", "interception CA ", loaded.ca->subject(), " (SHA-256 ",
              loaded.ca->fingerprint(), ")");
  return result;
}

bool interception::built_from(const policy::model::tls& config) const {
  if (files.ca_cert != config.ca_cert || files.ca_key != config.ca_key ||
      files.upstream_ca != config.upstream_ca)
    return false;
  // Compared by content, not by name: the file a reload finds may have been rewritten in place.
  // Unreadable or not a certificate: rebuild, so that the error is reported by create().
  tls::certificate_info now;
  std::string error;
  if (!leaves || !tls::read_certificate_info(config.ca_cert, now, error)) return false;
  if (file_digest(config.upstream_ca) != upstream_ca_digest) return false;
  return now.fingerprint == leaves->minter().ca().fingerprint();
}

}  // namespace airlock::proxy
