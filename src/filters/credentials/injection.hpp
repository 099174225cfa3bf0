#pragma once
// Applies a rule's credential injection (policy::compiled_injection) to a request head about
// to be forwarded: the agent's own values of the injected headers and query parameters are
// removed first, then the rule's are set from the snapshot's secrets.
//
// Fail closed: a secret bound to hosts (`secrets.NAME.hosts`) is never injected on another
// host; the request is refused instead (secret_not_bound).
//
// @par Thread Safety
// Free functions over caller-owned data; the policy parts are immutable.

#include "core/errc.hpp"
#include "net/host.hpp"
#include "policy/credentials.hpp"

#include <boost/beast/http/fields.hpp>

#include <optional>
#include <span>
#include <string>

namespace airlock::filters::credentials {

struct injection_outcome {
  core::errc error = core::errc::ok;
  std::string detail;  // names only, never a value
};

injection_outcome apply_injection(const policy::compiled_injection& inject,
                                  std::span<const policy::compiled_secret> secrets,
                                  const net::normalized_host& host,
                                  boost::beast::http::fields& head, std::string& target);

// The Authorization value `basic` sends ("Basic <base64>"), or nullopt when the rule sends no
// Basic credentials. The redaction engine is given its base64 part as a secret of its own, since
// an origin that echoes it would otherwise hand the encoded secret back.
std::optional<std::string> basic_authorization(const policy::compiled_injection& inject,
                                               std::span<const policy::compiled_secret> secrets);

}  // namespace airlock::filters::credentials
