#pragma once
// Host names that carry data (issue 16): a DNS lookup or a connection to
// "<encoded secret>.attacker.example" leaks the secret to whoever runs the attacker's name
// server, whatever the request itself carries. The labels left of the registrable part (the
// last two labels) are judged: hex that decodes to text or is 32 characters or longer, base32
// of 16 or more, long high-entropy labels, many labels chained, or a very long left part.
// Shared by the proxy's DLP filter (hostname_exfiltration) and the launcher's in-jail resolver.

#include <optional>
#include <string_view>

namespace airlock::net {

// Why `host` (a normalised DNS name, lower case) looks like it carries data ("hex label",
// "base32 label", "high-entropy label", "chained labels", "long name"), or nullopt.
std::optional<std::string_view> data_like_host(std::string_view host);

}  // namespace airlock::net
