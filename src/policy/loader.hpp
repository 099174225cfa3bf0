#pragma once
// Reads a policy file (YAML) and compiles it into a snapshot, or explains precisely why not.
// Never applies a policy partially: either every check passes and a snapshot is returned, or
// the result carries every error found (file, line, column, key, message) and no snapshot.

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
};

struct load_result {
  std::shared_ptr<const snapshot> policy;  // null when errors is not empty
  std::vector<load_error> errors;
  bool ok() const noexcept { return policy != nullptr; }
};

load_result load_file(const std::string& path, const load_options& options = {});
load_result load_string(std::string_view yaml, const std::string& source_name,
                        const load_options& options = {});

}  // namespace airlock::policy
