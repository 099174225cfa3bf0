#pragma once
// The trust material the jail sees: the system CA bundle plus the Airlock CA (--ca), built in
// memory by the launcher, written by the jail into its private staging tmpfs (mounts.hpp) and
// mounted read-only at /run/airlock inside:
//   ca-bundle.crt            system bundle + Airlock CA (SSL_CERT_FILE and friends)
//   certs/ca-bundle.crt      the same, in a directory (SSL_CERT_DIR; Go reads every file)
//   certs/<hash>.0           the Airlock CA under its OpenSSL subject hash (c_rehash layout)
//   truststore.jks           with --ca and a JVM: its cacerts + the Airlock CA (java_trust.hpp),
//                            bound over the JVM's cacerts inside

#include "launcher/mounts.hpp"
#include "launcher/plan.hpp"

#include <string>
#include <vector>

namespace airlock::launcher {

// Appends the files above to out, with paths below `dir` (relative, as staged_file wants).
// False with the failure recorded if --ca cannot be read or is not a PEM certificate.
// java_made tells whether a Java trust store was made (keytool can fail; that is reported by
// the caller as a warning, not a failure).
bool build_trust_files(const trust_spec& spec, const std::string& dir,
                       std::vector<staged_file>& out, bool& java_made);

}  // namespace airlock::launcher
