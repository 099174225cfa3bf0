#include "policy/parser.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "policy/dlp_parser.hpp"
#include "policy/key_text.hpp"
#include "policy/parser_sections.hpp"
#include "policy/state_parser.hpp"
#include "policy/yaml_document.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>

namespace airlock::policy {
namespace {

// The schema. (entries() can also refuse keys of features that do not exist yet by name, so
// that an operator who writes one does not believe it is enforced: fail closed. None now.)
constexpr std::string_view top_keys[] = {
    "mode",      "listen", "tls",   "limits", "network",   "audit",     "state",   "secrets",
    "redactors", "agents", "rules", "dlp",    "blocklist", "approvals", "include", "operators"};
constexpr std::string_view listen_keys[] = {"proxy", "admin", "admin_hosts", "relay",
                                            "relay_group"};
constexpr std::string_view tls_keys[] = {"ca_cert", "ca_key", "upstream_ca"};
constexpr std::string_view limits_keys[] = {
    "header_bytes",     "header_count",    "head_timeout",    "body_bytes",
    "response_bytes",   "connect_timeout", "dns_timeout",     "idle_timeout",
    "response_timeout", "drain_timeout",   "max_connections", "max_connections_per_client"};
constexpr std::string_view network_keys[] = {"block_private", "allow_cidrs"};
constexpr std::string_view audit_keys[] = {"path", "format", "on_failure"};
constexpr std::string_view agent_keys[] = {"rules", "token_sha256", "sources", "rate", "breaker"};
constexpr std::string_view secret_keys[] = {"env", "file", "placeholder", "hosts", "swap_in"};
constexpr std::string_view redactor_keys[] = {"name", "pattern", "replace"};

}  // namespace

namespace detail {

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

void parser::secrets(const YAML::Node& node, const std::string& path,
                     std::vector<model::secret>& out) {
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of secret names")) return;
  std::unordered_set<std::string> names;  // duplicates found in linear time
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
    if (!names.insert(s.name).second) {
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
              } else if (k == "swap_in") {
                s.has_swap_in = true;
                strings_into(v, child, s.swap_in);
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
  std::unordered_set<std::string> names;  // duplicates found in linear time
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
    if (!names.insert(a.name).second) {
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
                        } else if (lk == "admin_hosts") {
                          host_names_into(lv, child, p.listen.admin_hosts);
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
                        } else if (ak == "on_failure") {
                          if (*s == "deny" || *s == "continue")
                            p.audit.deny_on_failure = *s == "deny";
                          else
                            error(av, child, "must be deny or continue");
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
