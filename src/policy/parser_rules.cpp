// The parser's sections of one rule (and the rate and breaker an agent shares with rules):
// `rules:` entries, their ports, schemes, protocols, rates, WebSocket limits and breakers.
#include "policy/parser.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "policy/binaries.hpp"
#include "policy/dlp_parser.hpp"
#include "policy/key_text.hpp"
#include "policy/parser_sections.hpp"
#include "policy/ports.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

namespace airlock::policy {
namespace {

constexpr std::string_view rate_keys[] = {"requests_per_second",
                                          "requests_per_minute",
                                          "burst",
                                          "upload_bytes_per_second",
                                          "download_bytes_per_second",
                                          "concurrent",
                                          "requests_per_hour",
                                          "bytes_per_hour"};
constexpr std::string_view breaker_keys[] = {"max_failures", "window", "cooldown"};
constexpr std::string_view rule_keys[] = {
    "name",     "hosts",     "host_regex",  "ports",     "methods",   "paths",
    "upgrades", "addresses", "allow_cidrs", "inspect",   "mode",      "rate",
    "query",    "headers",   "body",        "inject",    "redact",    "schemes",
    "binaries", "dlp",       "mcp",         "protocols", "websocket", "ask"};
constexpr std::string_view websocket_keys[] = {"max_message_bytes", "messages_per_minute", "burst"};

}  // namespace

namespace detail {

void parser::rate(const YAML::Node& node, const std::string& path, model::rate& r) {
  using std::chrono::milliseconds;
  constexpr std::uint64_t max_count = std::uint64_t{1} << 40;  // far beyond any real rate
  constexpr std::uint32_t u32 = std::numeric_limits<std::uint32_t>::max();
  entries(node, path, rate_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "requests_per_second" || k == "requests_per_minute") {
              if (!r.requests_key.empty()) {
                error(v, key,
                      core::str_cat("give requests_per_second or requests_per_minute, not both"));
                return;
              }
              if (auto i = integer(v, key, 1, max_count)) {
                r.requests = *i;
                r.per = k == "requests_per_second" ? milliseconds(1'000) : milliseconds(60'000);
                r.requests_key = k;
              }
            } else if (k == "burst") {
              if (auto i = integer(v, key, 1, max_count)) r.burst = *i;
            } else if (k == "upload_bytes_per_second") {
              size_into(v, key, r.upload_bytes_per_second, 1);
            } else if (k == "download_bytes_per_second") {
              size_into(v, key, r.download_bytes_per_second, 1);
            } else if (k == "concurrent") {
              if (auto i = integer(v, key, 1, u32)) r.concurrent = static_cast<std::uint32_t>(*i);
            } else if (k == "requests_per_hour") {
              if (auto i = integer(v, key, 1, max_count)) r.requests_per_hour = *i;
            } else if (k == "bytes_per_hour") {
              size_into(v, key, r.bytes_per_hour, 1);
            }
          });
  if (r.burst != 0 && r.requests == 0 && marks_.has(join(path, "burst")))
    errors_.add(marks_.find(join(path, "burst")), join(path, "burst"),
                "burst needs requests_per_second or requests_per_minute");
}

void parser::protocols(const YAML::Node& v, const std::string& key, std::uint8_t& out) {
  if (!expect(v, key, YAML::NodeType::Sequence, "a list of protocols")) return;
  out = 0;
  std::size_t j = 0;
  for (auto p = v.begin(); p != v.end() && !errors_.full(); ++p, ++j) {
    const std::string sk = indexed(key, j);
    marks_.set(sk, to_mark(p->Mark()));
    const auto text = string(*p, sk);
    if (!text) continue;
    const std::uint8_t bit = *text == "http/1.1"    ? model::protocol_http1
                             : *text == "h2"        ? model::protocol_h2
                             : *text == "websocket" ? model::protocol_websocket
                                                    : 0;
    if (bit == 0)
      error(
          *p, sk,
          core::str_cat("unknown protocol '", text->substr(0, 40), "' (http/1.1, h2, websocket)"));
    else if (out & bit)
      error(*p, sk, core::str_cat("protocol '", *text, "' is listed twice"));
    out = static_cast<std::uint8_t>(out | bit);
  }
  if (out == 0 && v.size() == 0) error(v, key, "must not be empty (omit the key for all)");
}

void parser::websocket(const YAML::Node& node, const std::string& path,
                       model::websocket_limits& w) {
  constexpr std::uint64_t max_count = std::uint64_t{1} << 40;
  entries(node, path, websocket_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "max_message_bytes") {
              // Held in memory per message and direction: at most 1 GiB.
              size_into(v, key, w.max_message_bytes, 1);
              if (w.max_message_bytes > (std::uint64_t{1} << 30))
                error(v, key, "must be at most 1GiB");
            } else if (k == "messages_per_minute") {
              if (auto i = integer(v, key, 1, max_count)) w.messages_per_minute = *i;
            } else if (k == "burst") {
              if (auto i = integer(v, key, 1, max_count)) w.burst = *i;
            }
          });
}

void parser::breaker(const YAML::Node& node, const std::string& path, model::breaker& b) {
  using std::chrono::milliseconds;
  entries(node, path, breaker_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "max_failures") {
              if (auto i = integer(v, key, 0, std::numeric_limits<std::uint32_t>::max()))
                b.max_failures = static_cast<std::uint32_t>(*i);
            } else if (k == "window") {
              duration_into(v, key, b.window, milliseconds(1'000));
            } else if (k == "cooldown") {
              duration_into(v, key, b.cooldown, milliseconds(1'000));
            }
          });
}

// `ports: [443, 8000-8999]`: each entry a port or an inclusive range (ports.hpp).
void parser::ports(const YAML::Node& v, const std::string& key,
                   std::vector<model::port_range>& out) {
  if (!expect(v, key, YAML::NodeType::Sequence, "a list")) return;
  if (v.size() == 0) {
    error(v, key, "must not be empty (omit the key for the default [80, 443])");
    return;
  }
  out.clear();
  std::size_t j = 0;
  for (auto p = v.begin(); p != v.end() && !errors_.full(); ++p, ++j) {
    const std::string pk = indexed(key, j);
    marks_.set(pk, to_mark(p->Mark()));
    if (!expect(*p, pk, YAML::NodeType::Scalar, "a port or a range (8000-8999)")) continue;
    std::string why;
    if (auto range = parse_port_range(p->Scalar(), why))
      out.push_back(*range);
    else
      error(*p, pk, std::move(why));
  }
}

// `schemes: [http]` / `[https]`: how a request may come to this rule (docs/policy.md).
void parser::schemes(const YAML::Node& v, const std::string& key, std::vector<model::scheme>& out) {
  if (!expect(v, key, YAML::NodeType::Sequence, "a list")) return;
  if (v.size() == 0) {
    error(v, key, "must not be empty (omit the key for both: [http, https])");
    return;
  }
  std::size_t j = 0;
  for (auto p = v.begin(); p != v.end() && !errors_.full(); ++p, ++j) {
    const std::string sk = indexed(key, j);
    marks_.set(sk, to_mark(p->Mark()));
    const auto text = string(*p, sk);
    if (!text) continue;
    const auto s = parse_scheme(*text);
    if (!s) {
      error(*p, sk,
            core::str_cat("unknown scheme '", text->substr(0, 40),
                          "' (http: plain requests; https: CONNECT tunnels)"));
    } else if (std::find(out.begin(), out.end(), *s) != out.end()) {
      error(*p, sk, core::str_cat("scheme '", *text, "' is listed twice"));
    } else {
      out.push_back(*s);
    }
  }
}

void parser::rules(const YAML::Node& node, const std::string& path, std::vector<model::rule>& out,
                   std::size_t first) {
  if (!expect(node, path, YAML::NodeType::Sequence, "a list of rules")) return;
  std::size_t i = first;
  for (auto it = node.begin(); it != node.end(); ++it, ++i) {
    if (errors_.full()) return;
    model::rule r;
    r.ports = {{80, 80}, {443, 443}};
    r.at = to_mark(it->Mark());
    r.source = emitted(*it);
    const std::string key = indexed(path, i);
    marks_.set(key, r.at);
    entries(*it, key, rule_keys, {},
            [&](const std::string& k, const YAML::Node& v, const std::string& child) {
              if (k == "name")
                string_into(v, child, r.name);
              else if (k == "hosts")
                strings_into(v, child, r.hosts);
              else if (k == "host_regex")
                strings_into(v, child, r.host_regex);
              else if (k == "methods")
                strings_into(v, child, r.methods);
              else if (k == "paths")
                strings_into(v, child, r.paths);
              else if (k == "upgrades")
                strings_into(v, child, r.upgrades);
              else if (k == "addresses")
                strings_into(v, child, r.addresses);
              else if (k == "allow_cidrs")
                strings_into(v, child, r.allow_cidrs);
              else if (k == "inspect")
                bool_into(v, child, r.inspect);
              else if (k == "mode")
                r.mode = mode(v, child);
              else if (k == "rate")
                rate(v, child, r.rate);
              else if (k == "query")
                query(v, child, r.query);
              else if (k == "headers")
                headers(v, child, r.headers);
              else if (k == "body")
                body(v, child, r.body);
              else if (k == "inject")
                inject(v, child, r.inject);
              else if (k == "redact")
                redact(v, child, r.redact);
              else if (k == "ports")
                ports(v, child, r.ports);
              else if (k == "schemes")
                schemes(v, child, r.schemes);
              else if (k == "protocols")
                protocols(v, child, r.protocols);
              else if (k == "binaries")
                parse_binaries(v, child, r.binaries,
                               [&](const YAML::Node& at, const std::string& ek, std::string m) {
                                 error(at, ek, std::move(m));
                               });
              else if (k == "dlp")
                parse_dlp(v, child, r.dlp, marks_, errors_);
              else if (k == "mcp")
                mcp(v, child, r.mcp);
              else if (k == "websocket")
                websocket(v, child, r.websocket);
              else if (k == "ask")
                ask(v, child, r.ask);
            });
    out.push_back(std::move(r));
  }
}

}  // namespace detail
}  // namespace airlock::policy
