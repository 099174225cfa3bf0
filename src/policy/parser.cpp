#include "policy/parser.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "policy/binaries.hpp"
#include "policy/dlp_parser.hpp"
#include "policy/key_text.hpp"
#include "policy/parser_sections.hpp"
#include "policy/ports.hpp"
#include "policy/state_parser.hpp"
#include "policy/yaml_document.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>

namespace airlock::policy {
namespace {

// A node as YAML again, for model::rule::source: equal texts mean equal rules. Layout and
// comments are gone; a change of style (flow to block) still counts as a change.
std::string emitted(const YAML::Node& node) {
  try {
    YAML::Emitter out;
    out << node;
    return out.good() ? std::string(out.c_str()) : std::string();
  } catch (const YAML::Exception&) {
    return {};  // then policy_diff falls back to the fields it knows
  }
}

// The schema. (entries() can also refuse keys of features that do not exist yet by name, so
// that an operator who writes one does not believe it is enforced: fail closed. None now.)
constexpr std::string_view top_keys[] = {
    "mode",      "listen", "tls",   "limits", "network",   "audit",     "state",   "secrets",
    "redactors", "agents", "rules", "dlp",    "blocklist", "approvals", "include", "operators"};
constexpr std::string_view listen_keys[] = {"proxy", "admin", "relay", "relay_group"};
constexpr std::string_view tls_keys[] = {"ca_cert", "ca_key", "upstream_ca"};
constexpr std::string_view limits_keys[] = {
    "header_bytes",     "header_count",    "head_timeout",    "body_bytes",
    "response_bytes",   "connect_timeout", "dns_timeout",     "idle_timeout",
    "response_timeout", "drain_timeout",   "max_connections", "max_connections_per_client"};
constexpr std::string_view network_keys[] = {"block_private", "allow_cidrs"};
constexpr std::string_view audit_keys[] = {"path", "format"};
constexpr std::string_view agent_keys[] = {"rules", "token_sha256", "sources", "rate", "breaker"};
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
constexpr std::string_view secret_keys[] = {"env", "file", "placeholder", "hosts"};
constexpr std::string_view redactor_keys[] = {"name", "pattern", "replace"};

}  // namespace

namespace detail {

bool contains(key_list list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : core::str_cat(path, ".", key);
}

std::string_view describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "an undefined value";
  }
}

std::string parser::resolve(std::string file) const {
  if (!file.empty() && !base_dir_.empty()) {
    std::filesystem::path p(file);
    if (p.is_relative()) return (std::filesystem::path(base_dir_) / p).lexically_normal().string();
  }
  return file;
}

void parser::path_into(const YAML::Node& n, const std::string& key, std::string& out) {
  auto s = string(n, key);
  if (!s) return;
  out = resolve(std::move(*s));
}

void parser::strings_into(const YAML::Node& n, const std::string& key,
                          std::vector<std::string>& out) {
  if (!expect(n, key, YAML::NodeType::Sequence, "a list")) return;
  out.clear();
  std::size_t i = 0;
  for (auto it = n.begin(); it != n.end(); ++it, ++i) {
    if (errors_.full()) return;
    const std::string k = indexed(key, i);
    marks_.set(k, to_mark(it->Mark()));
    // Keep the positions aligned with the file even when an entry is bad, so the compiler's
    // "hosts[3]" is the file's hosts[3].
    out.push_back(string(*it, k).value_or(std::string{}));
  }
}

void parser::bool_into(const YAML::Node& n, const std::string& key, bool& out) {
  // YAML 1.2 core schema booleans only: "yes", "on" and "y" are YAML 1.1 and read as strings
  // by most other tools, so they are refused rather than guessed.
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") {
      out = true;
      return;
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      out = false;
      return;
    }
  }
  error(n, key, "expected true or false");
}

std::optional<std::uint64_t> parser::integer(const YAML::Node& n, const std::string& key,
                                             std::uint64_t min, std::uint64_t max) {
  if (!expect(n, key, YAML::NodeType::Scalar, "an integer")) return std::nullopt;
  const std::string& s = n.Scalar();
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) {
    error(n, key, core::str_cat("expected an integer, got '", s, "'"));
    return std::nullopt;
  }
  if (v < min || v > max) {
    error(n, key, core::str_cat("must be between ", min, " and ", max));
    return std::nullopt;
  }
  return v;
}

void parser::size_into(const YAML::Node& n, const std::string& key, std::uint64_t& out,
                       std::uint64_t min) {
  if (!expect(n, key, YAML::NodeType::Scalar, "a size")) return;
  const auto v = core::parse_size(n.Scalar());
  if (!v) {
    error(n, key, core::str_cat("invalid size '", n.Scalar(), "' (e.g. 65536, 64KiB, 10MiB)"));
    return;
  }
  if (*v < min) {
    error(n, key, core::str_cat("must be at least ", min, " bytes"));
    return;
  }
  out = *v;
}

void parser::duration_into(const YAML::Node& n, const std::string& key,
                           std::chrono::milliseconds& out, std::chrono::milliseconds min) {
  if (!expect(n, key, YAML::NodeType::Scalar, "a duration")) return;
  const auto v = core::parse_duration(n.Scalar());
  if (!v) {
    error(n, key, core::str_cat("invalid duration '", n.Scalar(), "' (e.g. 250ms, 5s, 2m, 1h)"));
    return;
  }
  if (*v < min) {
    error(n, key, core::str_cat("must be at least ", min.count(), "ms"));
    return;
  }
  out = *v;
}

std::optional<model::mode> parser::mode(const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) {
    if (n.Scalar() == "enforce") return model::mode::enforce;
    if (n.Scalar() == "report") return model::mode::report;
  }
  error(n, key, "expected enforce or report");
  return std::nullopt;
}

void parser::limits(const YAML::Node& node, const std::string& path, model::limits& l) {
  using std::chrono::milliseconds;
  constexpr auto u32 = std::numeric_limits<std::uint32_t>::max();
  entries(node, path, limits_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            auto count = [&](std::uint32_t& out) {
              if (auto i = integer(v, key, 1, u32)) out = static_cast<std::uint32_t>(*i);
            };
            // Zero would make the proxy useless (or, for timeouts, mean "never"): refused. A zero
            // request body limit is a valid choice (no uploads), as is draining for zero seconds.
            if (k == "header_bytes")
              size_into(v, key, l.header_bytes, 1);
            else if (k == "header_count")
              count(l.header_count);
            else if (k == "head_timeout")
              duration_into(v, key, l.head_timeout, milliseconds(1));
            else if (k == "body_bytes")
              size_into(v, key, l.body_bytes, 0);
            else if (k == "response_bytes")
              size_into(v, key, l.response_bytes, 1);
            else if (k == "connect_timeout")
              duration_into(v, key, l.connect_timeout, milliseconds(1));
            else if (k == "dns_timeout")
              duration_into(v, key, l.dns_timeout, milliseconds(1));
            else if (k == "idle_timeout")
              duration_into(v, key, l.idle_timeout, milliseconds(1));
            else if (k == "response_timeout")
              duration_into(v, key, l.response_timeout, milliseconds(1));
            else if (k == "drain_timeout")
              duration_into(v, key, l.drain_timeout, milliseconds(0));
            else if (k == "max_connections")
              count(l.max_connections);
            else if (k == "max_connections_per_client")
              count(l.max_connections_per_client);
          });
}

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

void parser::secrets(const YAML::Node& node, const std::string& path,
                     std::vector<model::secret>& out) {
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of secret names")) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (errors_.full()) return;
    const YAML::Node name_node = it->first;
    if (!name_node.IsScalar()) {
      error(name_node, path, "secret names must be strings");
      continue;
    }
    model::secret s;
    s.name = name_node.Scalar();
    s.at = to_mark(name_node.Mark());
    const std::string key = join(path, s.name);
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.name == s.name; })) {
      error(name_node, key, core::str_cat("duplicate secret '", s.name, "'"));
      continue;
    }
    marks_.set(key, s.at);
    if (it->second.IsNull()) {  // `name:` alone: point at the name, not at the next line
      error(name_node, key, "expected a mapping with env or file, got nothing");
      out.push_back(std::move(s));
      continue;
    }
    // The value is never in the policy: only where to read it from (so no error here can quote
    // it). A scalar here is most likely the secret itself, pasted in: not echoed.
    entries(it->second, key, secret_keys, {},
            [&](const std::string& k, const YAML::Node& v, const std::string& child) {
              if (k == "env") {
                string_into(v, child, s.env);
              } else if (k == "file") {
                path_into(v, child, s.file);
              } else if (k == "placeholder") {
                s.has_placeholder = true;
                string_into(v, child, s.placeholder);
              } else if (k == "hosts") {
                strings_into(v, child, s.hosts);
              }
            });
    out.push_back(std::move(s));
  }
}

void parser::redactors(const YAML::Node& node, const std::string& path,
                       std::vector<model::redactor>& out) {
  if (!expect(node, path, YAML::NodeType::Sequence, "a list of redactors")) return;
  std::size_t i = 0;
  for (auto it = node.begin(); it != node.end(); ++it, ++i) {
    if (errors_.full()) return;
    model::redactor r;
    r.at = to_mark(it->Mark());
    const std::string key = indexed(path, i);
    marks_.set(key, r.at);
    entries(*it, key, redactor_keys, {},
            [&](const std::string& k, const YAML::Node& v, const std::string& child) {
              if (k == "name") {
                string_into(v, child, r.name);
              } else if (k == "pattern") {
                string_into(v, child, r.pattern);
              } else if (k == "replace") {
                r.has_replace = true;
                string_into(v, child, r.replace);
              }
            });
    out.push_back(std::move(r));
  }
}

void parser::agents(const YAML::Node& node, const std::string& path,
                    std::vector<model::agent>& out) {
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of agent names")) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (errors_.full()) return;
    const YAML::Node name_node = it->first;
    const YAML::Node value = it->second;
    if (!name_node.IsScalar()) {
      error(name_node, path, "agent names must be strings");
      continue;
    }
    model::agent a;
    a.name = name_node.Scalar();
    a.at = to_mark(name_node.Mark());
    a.source = emitted(value);
    const std::string key = join(path, a.name);
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.name == a.name; })) {
      error(name_node, key, core::str_cat("duplicate agent '", a.name, "'"));
      continue;
    }
    marks_.set(key, a.at);
    entries(value, key, agent_keys, {},
            [&](const std::string& k, const YAML::Node& v, const std::string& child) {
              if (k == "rules")
                strings_into(v, child, a.rules);
              else if (k == "token_sha256")
                string_into(v, child, a.token_sha256);
              else if (k == "sources")
                strings_into(v, child, a.sources);
              else if (k == "rate")
                rate(v, child, a.rate);
              else if (k == "breaker")
                breaker(v, child, a.breaker);
            });
    out.push_back(std::move(a));
  }
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

void parser::policy(const YAML::Node& root, model::policy& p) {
  // An empty file is an empty policy: no agents, so every request is refused.
  if (root.IsNull()) return;
  if (!root.IsMap()) {
    error(root, "", core::str_cat("the policy must be a mapping, got ", describe(root)));
    return;
  }
  entries(root, "", top_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "mode") {
              if (auto m = mode(v, key)) p.mode = *m;
            } else if (k == "listen") {
              entries(v, key, listen_keys, {},
                      [&](const std::string& lk, const YAML::Node& lv, const std::string& child) {
                        if (lk == "proxy") {
                          string_into(lv, child, p.listen.proxy);
                        } else if (lk == "relay") {
                          // A Unix socket path (it has a '/'; relative to the policy file's
                          // folder) or host:port.
                          auto s = string(lv, child);
                          if (s && s->find('/') != std::string::npos)
                            path_into(lv, child, p.listen.relay);
                          else if (s)
                            p.listen.relay = *s;
                        } else if (lk == "relay_group") {
                          string_into(lv, child, p.listen.relay_group);
                        } else if (lk == "admin") {
                          // `admin: off` (or false, or "") turns the admin server off.
                          if (lv.IsNull())
                            p.listen.admin.clear();
                          else if (auto s = string(lv, child))
                            p.listen.admin = (*s == "off" || *s == "false") ? std::string{} : *s;
                        }
                      });
            } else if (k == "tls") {
              entries(v, key, tls_keys, {},
                      [&](const std::string& tk, const YAML::Node& tv, const std::string& child) {
                        if (tk == "ca_cert")
                          path_into(tv, child, p.tls.ca_cert);
                        else if (tk == "ca_key")
                          path_into(tv, child, p.tls.ca_key);
                        else if (tk == "upstream_ca")
                          path_into(tv, child, p.tls.upstream_ca);
                      });
            } else if (k == "limits") {
              limits(v, key, p.limits);
            } else if (k == "network") {
              entries(v, key, network_keys, {},
                      [&](const std::string& nk, const YAML::Node& nv, const std::string& child) {
                        if (nk == "block_private")
                          bool_into(nv, child, p.network.block_private);
                        else if (nk == "allow_cidrs")
                          strings_into(nv, child, p.network.allow_cidrs);
                      });
            } else if (k == "audit") {
              entries(v, key, audit_keys, {},
                      [&](const std::string& ak, const YAML::Node& av, const std::string& child) {
                        auto s = string(av, child);
                        if (!s) return;
                        if (ak == "format") {
                          if (*s == "json" || *s == "ocsf")
                            p.audit.ocsf = *s == "ocsf";
                          else
                            error(av, child, "must be json or ocsf");
                        } else if (s->empty())
                          error(av, child, "must not be empty (use '-' or 'off')");
                        else if (*s == "-" || *s == "off")
                          p.audit.path = *s;
                        else
                          path_into(av, child, p.audit.path);
                      });
            } else if (k == "state") {
              parse_state(v, key, base_dir_, p.state, marks_, errors_);
            } else if (k == "secrets") {
              secrets(v, key, p.secrets);
            } else if (k == "redactors") {
              redactors(v, key, p.redactors);
            } else if (k == "agents") {
              agents(v, key, p.agents);
            } else if (k == "rules") {
              rules(v, key, p.rules);
            } else if (k == "dlp") {
              parse_dlp(v, key, p.dlp, marks_, errors_);
            } else if (k == "blocklist") {
              parse_blocklist(v, key, p.blocklist, errors_);
            } else if (k == "approvals") {
              approvals(v, key, p.approvals);
            } else if (k == "operators") {
              operators(v, key, p.operators);
            } else if (k == "include") {
              strings_into(v, key, p.includes);
              for (auto& file : p.includes)
                file = resolve(file);
            }
          });
}

}  // namespace detail

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> d((n + 1) * (m + 1));
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i)
    at(i, 0) = i;
  for (std::size_t j = 0; j <= m; ++j)
    at(0, j) = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
    }
  }
  return at(n, m);
}

void parse_policy(std::string_view yaml, const std::string& base_dir, model::policy& out,
                  mark_table& marks, error_sink& errors) {
  yaml_document document;
  try {
    document = read_yaml_document(yaml);
  } catch (const YAML::Exception& e) {
    errors.add(to_mark(e.mark), "", e.msg);
    return;
  }
  using status = yaml_document::status;
  if (document.what == status::several) {
    errors.add(to_mark(document.second), "", "only one YAML document is allowed in a policy file");
    return;
  }
  if (document.what == status::stuck) {
    errors.add(to_mark(document.second), "", "unexpected character (not valid YAML here)");
    return;
  }
  if (document.what == status::none) return;
  try {
    detail::parser(base_dir, marks, errors).policy(document.root, out);
    check_state(out, marks, errors);
  } catch (const YAML::Exception& e) {
    // Not expected (every access is type-checked first), but a policy is never half-read.
    errors.add(to_mark(e.mark), "", e.msg);
  }
}

}  // namespace airlock::policy
