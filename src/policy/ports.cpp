#include "policy/ports.hpp"

#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::policy {
namespace {

// 1..65535 in plain decimal without leading zeros: the spelling parse_authority accepts.
std::optional<std::uint16_t> port_number(std::string_view s) {
  if (s.empty() || s.size() > 5 || s.front() == '0') return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<model::port_range> parse_port_range(std::string_view text, std::string& error) {
  const std::size_t dash = text.find('-');
  const std::string_view first = text.substr(0, dash);
  const std::string_view last = dash == std::string_view::npos ? first : text.substr(dash + 1);
  if (!all_digits(first) || !all_digits(last)) {
    error = core::str_cat("expected a port or a range of ports (443, 8000-8999), got '",
                          text.substr(0, 40), "'");
    return std::nullopt;
  }
  const auto a = port_number(first), b = port_number(last);
  if (!a || !b) {
    error = (first.size() > 1 && first.front() == '0') || (last.size() > 1 && last.front() == '0')
                ? "write ports without leading zeros"
                : "must be between 1 and 65535";
    return std::nullopt;
  }
  if (*a > *b) {
    error =
        core::str_cat("range ", *a, "-", *b, " ends before it starts (write ", *b, "-", *a, ")");
    return std::nullopt;
  }
  return model::port_range{*a, *b};
}

std::vector<model::port_range> merge_port_ranges(std::vector<model::port_range> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<model::port_range> out;
  for (const auto& r : ranges) {
    if (!out.empty() && static_cast<unsigned>(r.first) <= out.back().last + 1u) {
      out.back().last = std::max(out.back().last, r.last);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::string ports_text(std::span<const model::port_range> ranges, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (i == max) return core::str_cat(out, " and ", ranges.size() - max, " more");
    out += core::str_cat(i ? ", " : "", std::string(ranges[i]));
  }
  return out;
}

bool contains_port(std::span<const model::port_range> merged, std::uint16_t port) noexcept {
  // Sorted and disjoint: the first range that does not end before the port is the only one
  // that can hold it.
  auto it =
      std::lower_bound(merged.begin(), merged.end(), port,
                       [](const model::port_range& r, std::uint16_t p) { return r.last < p; });
  return it != merged.end() && it->contains(port);
}

std::optional<model::scheme> parse_scheme(std::string_view text) {
  if (text == "http") return model::scheme::http;
  if (text == "https") return model::scheme::https;
  return std::nullopt;
}

std::string_view scheme_name(model::scheme s) noexcept {
  return s == model::scheme::http ? "http" : "https";
}

std::string schemes_text(std::span<const model::scheme> schemes) {
  if (schemes.empty()) return "http, https";
  std::string out;
  for (auto s : schemes)
    out += core::str_cat(out.empty() ? "" : ", ", scheme_name(s));
  return out;
}

std::string protocols_text(std::uint8_t protocols) {
  std::string out;
  if (protocols & model::protocol_http1) out += "http/1.1";
  if (protocols & model::protocol_h2) out += core::str_cat(out.empty() ? "" : ", ", "h2");
  if (protocols & model::protocol_websocket)
    out += core::str_cat(out.empty() ? "" : ", ", "websocket");
  return out;
}

}  // namespace airlock::policy
