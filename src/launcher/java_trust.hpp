#pragma once
// The JVM's trust with --ca: a JKS copy of the JVM's cacerts with the Airlock CA added, which
// the jail sees over the JVM's own cacerts (so no JVM flag is needed). keytool takes about a
// second, so the store is made once per (CA, cacerts, keytool) and kept in a cache directory
// the caller alone can write: $XDG_CACHE_HOME/airlock/java-trust, ~/.cache/airlock/java-trust,
// else /var/tmp/airlock-java-trust-UID. A store is written under a temporary name and renamed
// into place, so a jail never binds a half-written one.

#include "launcher/plan.hpp"

#include <optional>
#include <string>

namespace airlock::launcher {

// The cache directory to use (created mode 0700 if missing), or nullopt when none is safe:
// the trust cache, which also keeps the memos of trust_memo.hpp.
// it must be a real directory owned by the caller and not writable by anyone else, since
// whatever it holds becomes a trust anchor inside the jail.
std::optional<std::string> java_cache_dir();

// The file name of the store for this CA and spec's cacerts and keytool ("<hex>.jks"), or
// nullopt when cacerts cannot be read. Changes whenever any of the three changes.
std::optional<std::string> java_store_name(const trust_spec& spec, const std::string& ca_pem);
// The same, remembered in cache_dir (trust_memo.hpp), so that a warm start hashes nothing.
std::optional<std::string> java_store_name(const trust_spec& spec, const std::string& ca_pem,
                                           const std::string& cache_dir);

// The canonical path of the cached store, made with keytool first if missing; nullopt with
// the failure recorded. made_now tells whether keytool ran.
std::optional<std::string> cached_java_store(const trust_spec& spec, const std::string& ca_pem,
                                             const std::string& cache_dir, bool& made_now);

}  // namespace airlock::launcher
