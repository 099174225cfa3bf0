#pragma once
// Private to the policy component: reads one secret's value from an environment variable or a
// file, at load time, and checks it can be sent in a header. Messages name the source (the
// variable, the path) and never quote the value, nor any part of it.

#include "policy/secret_value.hpp"

#include <string>
#include <string_view>

namespace airlock::policy {

struct secret_read {
  secret_value value;   // valid when error is empty
  std::string error;    // "environment variable 'X' is not set", "cannot read '/p': ..."
  std::string warning;  // e.g. a file that group or others can read
  bool ok() const noexcept { return error.empty(); }
};

// POSIX portable name: letters, digits and '_', not starting with a digit.
bool valid_env_name(std::string_view name) noexcept;

secret_read read_secret_env(const std::string& variable);
// Follows symbolic links (Kubernetes mounts secrets through them); refuses anything that is not
// a regular file (a FIFO would block the load) and anything larger than max_secret_bytes.
secret_read read_secret_file(const std::string& path);

// The checks both sources share, on the raw bytes. Trailing line breaks ("\n", "\r\n") are
// removed (`echo TOKEN > file`); then the value must be min_secret_bytes..max_secret_bytes
// long, hold no control character (it could not be sent in a header: RFC 9110 section 5.5)
// and not start or end with white space. `what` names the source in messages. Wipes `raw`.
secret_read check_secret(std::string& raw, std::string_view what);

}  // namespace airlock::policy
