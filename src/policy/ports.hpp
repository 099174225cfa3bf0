#pragma once
// A rule's `ports` and `schemes` entries: reading them from their text, and printing a port list
// compactly ("80, 443, 8000-8999", never 28,000 numbers) for refusals, explain and check.

#include "policy/model.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

// "443" or "8000-8999" (plain decimal, no sign, spaces or leading zeros, first <= last, each
// 1..65535). On failure, nullopt and `error` says why (for "rules[i].ports[j]: ...").
std::optional<model::port_range> parse_port_range(std::string_view text, std::string& error);

// Sorted by first port, overlapping and adjacent ranges merged: the form decide() searches.
std::vector<model::port_range> merge_port_ranges(std::vector<model::port_range> ranges);

// "80, 443, 8000-8999"; after `max` entries, "and N more" (a refusal stays one short line).
std::string ports_text(std::span<const model::port_range> ranges, std::size_t max = SIZE_MAX);

bool contains_port(std::span<const model::port_range> merged, std::uint16_t port) noexcept;

// "http" or "https"; nullopt for anything else (case matters: the file says what it means).
std::optional<model::scheme> parse_scheme(std::string_view text);
std::string_view scheme_name(model::scheme s) noexcept;
// "http, https"; "http, https" for an empty list (the default).
std::string schemes_text(std::span<const model::scheme> schemes);
// A rule's `protocols` bits as written: "http/1.1, h2, websocket".
std::string protocols_text(std::uint8_t protocols);

}  // namespace airlock::policy
