#pragma once
// Placeholders: fake values shaped like a secret (same prefix and length) that the launcher
// hands the agent, so tools that insist on an API key start. The proxy swaps a placeholder for
// the secret's value on the hosts the secret is bound to, where a credential goes (the
// secret's swap_in: placement.hpp), and refuses a request that carries it to any other host
// (an exfiltration attempt: the agent has no business sending it there).
//
// Only what the proxy sees of a request is searched: the method, header names and values, and
// the request target. Proxy-Authorization's value is skipped (it is for the proxy, and never
// forwarded).
//
// @par Thread Safety
// Free functions over caller-owned data.

#include "policy/secrets.hpp"

#include <boost/beast/http/fields.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::credentials {

// Whether any secret has a placeholder (when none does, nothing needs searching).
bool any_placeholder(std::span<const policy::compiled_secret> secrets) noexcept;

// Indices (into `secrets`) of the secrets whose placeholder occurs in a header name or value,
// in `target` or in `method`, in index order, each once.
std::vector<std::size_t> find_placeholders(std::span<const policy::compiled_secret> secrets,
                                           const boost::beast::http::fields& head,
                                           std::string_view target, std::string_view method = {});

// Replaces the placeholders of `which` with the secrets' values where each secret's swap_in
// swaps it (placement.hpp; `anywhere`: every occurrence in header values and `target`). An
// occurrence anywhere else is left as it is (the guard has refused such a request already:
// find_misplaced). The caller has checked that the host is bound to each of them.
void swap_placeholders(std::span<const policy::compiled_secret> secrets,
                       std::span<const std::size_t> which, boost::beast::http::fields& head,
                       std::string& target);

}  // namespace airlock::filters::credentials
