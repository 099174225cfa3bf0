#pragma once
// Reads a policy file (YAML) and compiles it into a snapshot, or explains precisely why not.
// Never applies a policy partially: either every check passes and a snapshot is returned, or
// the result carries every error found (file, line, column, key, message) and no snapshot.
// Secrets (`secrets:`) are read from the environment and from files during the load, every
// time: loading again is how a rotated secret is picked up. No error or warning quotes a value.

#include "policy/snapshot.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

struct load_error {
  std::string file;
  int line = 0;     // 1-based, 0 when unknown (e.g. file not readable)
  int column = 0;   // 1-based
  std::string key;  // dotted path, e.g. "rules[2].paths[0]"
  std::string message;
  // "file:line:column: key: message"
  std::string to_string() const;
};

struct load_options {
  // The proxy's listening endpoints, refused by the address guard (loop prevention).
  std::vector<boost::asio::ip::tcp::endpoint> own_endpoints;
  // Read every secret's value (from its environment variable or file), and check that the CA
  // key is readable. Off only to validate a policy where the secrets are not available (CI,
  // `airlock run --policy` as a user who may not read them): sources and placeholders are checked
  // as far as they can be without the values, and the snapshot's secrets have empty values, so it
  // must not be used to run a proxy.
  bool read_secrets = true;
};

struct load_result {
  std::shared_ptr<const snapshot> policy;  // null when errors is not empty
  std::vector<load_error> errors;
  // Found whether or not the policy loaded, and never a reason to refuse it (e.g. a secret file
  // that group or others can read). The caller prints or logs them ("warning: " + to_string()).
  std::vector<load_error> warnings;
  bool ok() const noexcept { return policy != nullptr; }
};

// A file that is not a regular file (a FIFO, a device) or holds no document (empty, or only
// comments) is an error: the first would block or never end, the second is what a file being
// rewritten in place looks like between its truncation and its new content.
load_result load_file(const std::string& path, const load_options& options = {});
load_result load_string(std::string_view yaml, const std::string& source_name,
                        const load_options& options = {});

}  // namespace airlock::policy
