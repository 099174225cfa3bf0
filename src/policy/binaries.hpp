#pragma once
// A rule's `binaries` (issue 18): the programs, inside an `airlock run` jail, whose requests
// the rule allows. Each entry is an absolute path as the jail sees it, optionally with the
// executable's SHA-256:
//
//   binaries: [/usr/bin/git, {path: /usr/bin/pip3, sha256: 3f5a...}]
//
// The program comes from the launcher's relay (net/peer_binary.hpp); a connection without
// one (a direct client of the proxy, or a program the relay could not identify) matches no
// rule that has `binaries`: fail closed. Parsing, matching and the words for explain.

#include "net/peer_binary.hpp"
#include "policy/model.hpp"

#include <functional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace airlock::policy {

// Reports an error at a node under a dotted key.
using node_error = std::function<void(const YAML::Node& at, const std::string& key, std::string)>;

// Parses the value of `binaries` (a non-empty list of paths or {path, sha256} mappings).
void parse_binaries(const YAML::Node& n, const std::string& key,
                    std::vector<model::binary_ref>& out, const node_error& error);

// Whether `program` is one of `allowed` (path equal, and the hash where the entry has one).
// An empty list allows any program, and no program at all; a null program matches no entry.
bool binaries_allow(const std::vector<model::binary_ref>& allowed,
                    const net::peer_binary* program) noexcept;

// Whether `path` is named by any entry (for bounded metric labels).
bool binaries_name(const std::vector<model::binary_ref>& allowed, std::string_view path) noexcept;

// "[/usr/bin/git, /usr/bin/pip3 (sha256 3f5a0c1d…)]"
std::string binaries_text(const std::vector<model::binary_ref>& allowed);

// A program's path fit to quote in a refusal's detail (printable ASCII, not too long), else a
// placeholder: the path comes from inside the jail.
std::string quoted_program(const net::peer_binary& program);

}  // namespace airlock::policy
