#pragma once
// The trust material the jail sees: the system CA bundle plus the Airlock CA (--ca), written
// to the launcher's private directory and mounted read-only at /run/airlock inside:
//   ca-bundle.crt            system bundle + Airlock CA (SSL_CERT_FILE and friends)
//   certs/ca-bundle.crt      the same, in a directory (SSL_CERT_DIR; Go reads every file)
//   certs/<hash>.0           the Airlock CA under its OpenSSL subject hash (c_rehash layout)
//   truststore.p12           with --java-truststore: the JVM's cacerts + the Airlock CA

#include "launcher/plan.hpp"

#include <string>

namespace airlock::launcher {

// False with the failure recorded if the bundle cannot be written or --ca is not a PEM
// certificate. java_made tells whether a Java trust store was made (keytool can fail; that is
// reported by the caller as a warning, not a failure).
bool write_trust_dir(const trust_spec& spec, const std::string& dir, bool& java_made);

}  // namespace airlock::launcher
