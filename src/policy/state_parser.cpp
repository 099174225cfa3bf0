#include "policy/state_parser.hpp"

#include "core/str_cat.hpp"
#include "net/host.hpp"
#include "policy/parser.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>

namespace airlock::policy {
namespace {

constexpr std::string_view state_keys[] = {"backend",    "address",         "tls",
                                           "username",   "password_secret", "key_prefix",
                                           "timeout_ms", "on_unavailable",  "replicas"};

class state_parser {
 public:
  state_parser(const std::string& base_dir, mark_table& marks, error_sink& errors)
      : base_dir_(base_dir), marks_(marks), errors_(errors) {}

  void parse(const YAML::Node& node, const std::string& path, model::state_store& s) {
    // `state: local` / `state: redis` alone are accepted as the backend's name.
    if (node.IsScalar()) {
      backend(node, path, s);
      check(node, path, s);
      return;
    }
    if (!node.IsMap()) {
      error(node, path, "expected a mapping or 'local'");
      return;
    }
    each_entry(node, path, errors_,
               [&](const std::string& key, const YAML::Node& k, const YAML::Node& v,
                   const std::string& child) {
                 if (std::find(std::begin(state_keys), std::end(state_keys), key) ==
                     std::end(state_keys)) {
                   unknown(k, child, key);
                   return;
                 }
                 marks_.set(child,
                            to_mark(v.Mark()).line > 0 ? to_mark(v.Mark()) : to_mark(k.Mark()));
                 value(key, v, child, s);
               });
    check(node, path, s);
  }

 private:
  void error(const YAML::Node& at, const std::string& key, std::string message) {
    errors_.add(to_mark(at.Mark()), key, std::move(message));
  }

  void unknown(const YAML::Node& at, const std::string& key, std::string_view name) {
    std::string message = core::str_cat("unknown key '", name, "'");
    for (std::string_view k : state_keys)
      if (edit_distance(name, k) < 3) {
        message += core::str_cat("; did you mean '", k, "'?");
        break;
      }
    error(at, key, std::move(message));
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& key) {
    if (n.IsScalar()) return n.Scalar();
    error(n, key, "expected a string");
    return std::nullopt;
  }

  std::optional<std::uint64_t> integer(const YAML::Node& n, const std::string& key,
                                       std::uint64_t min, std::uint64_t max) {
    auto s = scalar(n, key);
    if (!s) return std::nullopt;
    std::uint64_t v = 0;
    const auto r = std::from_chars(s->data(), s->data() + s->size(), v);
    if (r.ec != std::errc{} || r.ptr != s->data() + s->size() || v < min || v > max) {
      error(n, key, core::str_cat("expected an integer from ", min, " to ", max));
      return std::nullopt;
    }
    return v;
  }

  void backend(const YAML::Node& v, const std::string& key, model::state_store& s) {
    auto b = scalar(v, key);
    if (!b) return;
    if (*b == "local")
      s.backend = model::state_backend::local;
    else if (*b == "redis")
      s.backend = model::state_backend::redis;
    else
      error(v, key, core::str_cat("unknown state backend '", *b, "' (local or redis)"));
  }

  void value(const std::string& k, const YAML::Node& v, const std::string& key,
             model::state_store& s) {
    if (k == "backend") {
      backend(v, key, s);
    } else if (k == "address") {
      address(v, key, s);
    } else if (k == "tls") {
      tls(v, key, s.tls);
    } else if (k == "username") {
      if (auto u = scalar(v, key)) s.username = *u;
    } else if (k == "password_secret") {
      if (auto p = scalar(v, key)) s.password_secret = *p;
    } else if (k == "key_prefix") {
      if (auto p = scalar(v, key)) {
        // Keys and channels are built from it; a space or control byte would only confuse
        // whoever reads them with redis-cli.
        if (std::any_of(p->begin(), p->end(),
                        [](unsigned char c) { return c <= 0x20 || c == 0x7f; }))
          error(v, key, "must not contain spaces or control characters");
        else
          s.key_prefix = *p;
      }
    } else if (k == "timeout_ms") {
      if (auto t = integer(v, key, 1, 60'000)) s.timeout = std::chrono::milliseconds(*t);
    } else if (k == "on_unavailable") {
      auto m = scalar(v, key);
      if (m && *m == "local")
        s.on_unavailable = model::state_fallback::local;
      else if (m && *m == "deny")
        s.on_unavailable = model::state_fallback::deny;
      else if (m)
        error(v, key, core::str_cat("unknown on_unavailable '", *m, "' (local or deny)"));
    } else if (k == "replicas") {
      if (auto r = integer(v, key, 1, 1'000)) s.replicas = static_cast<std::uint32_t>(*r);
    }
  }

  // `tls: true|false`, or `tls: {ca, server_name, cert, key}` (on, with those settings).
  void tls(const YAML::Node& v, const std::string& key, model::state_tls& t) {
    if (v.IsScalar()) {
      if (v.Scalar() == "true" || v.Scalar() == "false")
        t.enabled = v.Scalar() == "true";
      else
        error(v, key, "expected true, false or a mapping {ca, server_name, cert, key}");
      return;
    }
    if (!v.IsMap()) {
      error(v, key, "expected true, false or a mapping {ca, server_name, cert, key}");
      return;
    }
    t.enabled = true;
    static constexpr std::string_view state_tls_keys[] = {"ca", "server_name", "cert", "key"};
    each_entry(
        v, key, errors_,
        [&](const std::string& name, const YAML::Node& k, const YAML::Node& tv,
            const std::string& child) {
          if (std::find(std::begin(state_tls_keys), std::end(state_tls_keys), name) ==
              std::end(state_tls_keys)) {
            error(k, child, core::str_cat("unknown key '", name, "' (ca, server_name, cert, key)"));
            return;
          }
          marks_.set(child, to_mark(tv.Mark()).line > 0 ? to_mark(tv.Mark()) : to_mark(k.Mark()));
          auto text = scalar(tv, child);
          if (!text) return;
          if (name == "server_name")
            t.server_name = *text;
          else
            (name == "ca" ? t.ca : name == "cert" ? t.cert : t.key) = file(*text);
        });
  }

  // A file named in the policy: relative to the policy file's folder.
  std::string file(const std::string& text) const {
    std::filesystem::path p(text);
    if (p.is_relative() && !base_dir_.empty())
      p = (std::filesystem::path(base_dir_) / p).lexically_normal();
    return p.string();
  }

  void address(const YAML::Node& v, const std::string& key, model::state_store& s) {
    auto a = scalar(v, key);
    if (!a) return;
    s.address = *a;
    if (a->find('/') != std::string::npos) {
      std::filesystem::path p(*a);
      if (p.is_relative() && !base_dir_.empty())
        p = (std::filesystem::path(base_dir_) / p).lexically_normal();
      s.unix_path = p.string();
      return;
    }
    const auto authority = net::parse_authority(*a, 0, true);
    if (!authority) {
      error(v, key, "expected host:port or a Unix socket path");
      return;
    }
    s.host = authority->host.text;
    s.port = authority->port;
  }

  void check(const YAML::Node& node, const std::string& path, model::state_store& s) {
    if (!s.shared()) return;
    if (s.address.empty() && !errors_.reported(path + ".address"))
      error(node, path, "state: redis needs an address (host:port or a Unix socket path)");
    if (s.tls.enabled && !s.unix_path.empty())
      error(node, path + ".tls", "tls needs a TCP address (host:port), not a Unix socket");
    if (s.tls.cert.empty() != s.tls.key.empty())
      error(node, path + ".tls", "tls.cert and tls.key go together: set both or neither");
  }

  const std::string& base_dir_;
  mark_table& marks_;
  error_sink& errors_;
};

}  // namespace

void parse_state(const YAML::Node& node, const std::string& path, const std::string& base_dir,
                 model::state_store& out, mark_table& marks, error_sink& errors) {
  state_parser(base_dir, marks, errors).parse(node, path, out);
}

void check_state(const model::policy& policy, const mark_table& marks, error_sink& errors) {
  const auto& s = policy.state;
  if (s.password_secret.empty()) return;
  const bool known =
      std::any_of(policy.secrets.begin(), policy.secrets.end(),
                  [&](const model::secret& x) { return x.name == s.password_secret; });
  // Not quoted: a password pasted here by mistake looks like a name as often as not.
  if (!known)
    errors.add(marks.find("state.password_secret"), "state.password_secret",
               "names no entry of secrets (the name is not repeated: a password may have been "
               "pasted here; declare the password as a secret and give its name)");
}

}  // namespace airlock::policy
