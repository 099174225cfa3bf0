#pragma once
// `airlock explain`: how the policy treats one request, in words. Walks the agent's rules in
// order and says why each did or did not match, then gives the decision decide() makes. No DNS
// is resolved; for an IP literal (or a rule's pinned addresses) the address guard is applied.

#include "policy/snapshot.hpp"

#include <string>
#include <string_view>

namespace airlock::policy {

struct explain_request {
  std::string_view agent = "default";
  // "GET", "POST", ... or "CONNECT" (then url is "host:port").
  std::string_view method;
  // "http://host[:port]/path?query": a plain request, decided as is.
  // "https://host[:port]/path": decided as CONNECT host:port, and when the rule that allows the
  // tunnel inspects it, also as the inner request.
  std::string_view url;
  std::string_view upgrade;  // Upgrade protocol (e.g. "websocket"); empty for none
  // The program making the request, as the launcher's relay would name it (rules'
  // `binaries`); null: none, as for a direct client of the proxy.
  const net::peer_binary* binary = nullptr;
};

struct explanation {
  bool allowed = false;      // what the proxy would do (report mode lets denials through)
  bool input_error = false;  // unknown agent, bad method or URL: nothing was decided
  std::string text;          // several lines, each ending in '\n'
  // The rule that decided the (inner) request: the one that allowed it, or came closest.
  const compiled_rule* rule = nullptr;
};

explanation explain(const snapshot& policy, const explain_request& request);

}  // namespace airlock::policy
