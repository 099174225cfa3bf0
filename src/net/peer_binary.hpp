#pragma once
// The program behind a relayed connection, as the launcher found it inside the jail
// (launcher/peer_identity.hpp) and the proxy received it (PROXY v2 TLVs, proxy_protocol.hpp).
// Plain data; shared by the launcher, the proxy and the policy (rules' `binaries`).

#include <string>
#include <vector>

namespace airlock::net {

struct peer_binary {
  // The executable's path as the jail sees it (readlink(/proc/PID/exe)). For a script this is
  // its interpreter (/usr/bin/python3), never the script: the kernel execs the interpreter.
  std::string path;
  std::string sha256;  // lower-case hex of the executable's bytes
  // From the parent up to the jail's init (exclusive): each ancestor's exe path, or its comm
  // in brackets when the exe cannot be read. For audit only; rules do not match on it.
  std::vector<std::string> ancestors;
};

}  // namespace airlock::net
