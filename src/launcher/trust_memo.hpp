#pragma once
// Results of the pure, slow steps of `--ca` trust, remembered in the trust cache directory
// (java_trust.hpp: private to the caller) so that a warm start needs no OpenSSL at all.
//
// Why: the first use of OpenSSL 3 in a process loads its configuration and the default
// provider, and decoding a certificate also sets up the key decoders. Counted with callgrind,
// that is about 9M instructions (~3 ms) of `airlock run --ca CA -- true`'s 17M, for two
// answers that only change with their inputs: the CA's subject hash and the Java store's name.
//
// A memo is one small file, "memo-<FNV-1a 64 of the key>", holding the value, a newline and
// the key itself; a lookup compares the whole key, so a hash collision or a stale file is a
// miss, never a wrong answer. Values are one line (no '\n').

#include <optional>
#include <string>
#include <string_view>

namespace airlock::launcher {

// The value remembered for key in dir, or nullopt (no file, another key, unreadable).
std::optional<std::string> recall(const std::string& dir, std::string_view key);

// Remembers value for key in dir (written under a temporary name and renamed, so a
// concurrent launcher reads the old file or the new, never half of one). Best effort: a
// failure only costs the next start the slow path. Keeps the newest `keep` memos.
void remember(const std::string& dir, std::string_view key, std::string_view value,
              std::size_t keep = 32);

}  // namespace airlock::launcher
