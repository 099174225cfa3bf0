#include "policy/binaries.hpp"

#include "core/str_cat.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace airlock::policy {
namespace {

// An absolute, normalised path: what readlink(/proc/PID/exe) prints, so that a match is a
// string comparison (no "//", "/./", "/../", trailing "/" or NUL).
bool is_plain_path(std::string_view p) {
  if (p.size() < 2 || p.front() != '/' || p.back() == '/') return false;
  if (p.find('\0') != std::string_view::npos || p.find("//") != std::string_view::npos)
    return false;
  std::size_t i = 1;
  while (i <= p.size()) {
    const std::size_t end = std::min(p.find('/', i), p.size());
    const std::string_view seg = p.substr(i, end - i);
    if (seg == "." || seg == "..") return false;
    i = end + 1;
  }
  return true;
}

std::optional<std::string> hex_sha256(std::string_view s) {
  if (s.size() != 64) return std::nullopt;
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    out.push_back(c);
  }
  return out;
}

}  // namespace

void parse_binaries(const YAML::Node& n, const std::string& key,
                    std::vector<model::binary_ref>& out, const node_error& error) {
  if (!n.IsSequence()) {
    error(n, key, "expected a list of programs (paths, or {path, sha256})");
    return;
  }
  if (n.size() == 0) {
    error(n, key, "must not be empty (omit the key to allow any program)");
    return;
  }
  std::size_t i = 0;
  for (auto it = n.begin(); it != n.end(); ++it, ++i) {
    const std::string k = core::str_cat(key, '[', i, ']');
    model::binary_ref ref;
    ref.at = {it->Mark().line + 1, it->Mark().column + 1};
    const YAML::Node& e = *it;
    if (e.IsScalar()) {
      ref.path = e.Scalar();
    } else if (e.IsMap()) {
      bool bad = false;
      for (auto kv = e.begin(); kv != e.end(); ++kv) {
        const std::string name = kv->first.IsScalar() ? kv->first.Scalar() : std::string();
        if ((name == "path" || name == "sha256") && !kv->second.IsScalar()) {
          error(kv->second, core::str_cat(k, '.', name), "expected a string");
          bad = true;
        } else if (name == "path") {
          ref.path = kv->second.Scalar();
        } else if (name == "sha256") {
          auto h = hex_sha256(kv->second.Scalar());
          if (!h) {
            error(kv->second, k + ".sha256", "expected 64 hexadecimal digits (sha256sum FILE)");
            bad = true;
          } else {
            ref.sha256 = std::move(*h);
          }
        } else {
          error(kv->first, k, core::str_cat("unknown key '", name, "' (path, sha256)"));
          bad = true;
        }
      }
      if (bad) continue;
      if (ref.path.empty()) {
        error(e, k, "a program needs its path");
        continue;
      }
    } else {
      error(e, k, "expected a path or {path, sha256}");
      continue;
    }
    if (!is_plain_path(ref.path)) {
      error(e, k,
            core::str_cat("'", ref.path.substr(0, 80),
                          "' is not an absolute, normalised path (as the jail sees the "
                          "executable, e.g. /usr/bin/git)"));
      continue;
    }
    const bool twice = std::any_of(out.begin(), out.end(), [&](const model::binary_ref& r) {
      return r.path == ref.path && r.sha256 == ref.sha256;
    });
    if (twice) {
      error(e, k, core::str_cat("'", ref.path, "' is listed twice"));
      continue;
    }
    out.push_back(std::move(ref));
  }
}

bool binaries_allow(const std::vector<model::binary_ref>& allowed,
                    const net::peer_binary* program) noexcept {
  if (allowed.empty()) return true;
  if (program == nullptr) return false;
  return std::any_of(allowed.begin(), allowed.end(), [&](const model::binary_ref& r) {
    return r.path == program->path && (r.sha256.empty() || r.sha256 == program->sha256);
  });
}

bool binaries_name(const std::vector<model::binary_ref>& allowed, std::string_view path) noexcept {
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const model::binary_ref& r) { return r.path == path; });
}

std::string binaries_text(const std::vector<model::binary_ref>& allowed) {
  std::string out = "[";
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    out += core::str_cat(i ? ", " : "", allowed[i].path);
    if (!allowed[i].sha256.empty())
      out += core::str_cat(" (sha256 ", std::string_view(allowed[i].sha256).substr(0, 12), "...)");
  }
  return out + "]";
}

std::string quoted_program(const net::peer_binary& program) {
  const auto& p = program.path;
  const bool printable = p.size() <= 200 && std::all_of(p.begin(), p.end(), [](char c) {
                           return c > ' ' && c < 0x7F && c != '"' && c != '\\';
                         });
  return printable ? p : std::string("(a program with an unprintable path)");
}

}  // namespace airlock::policy
