// The parser's readers of single values (paths, strings, booleans, integers, sizes, durations,
// modes) and the helpers every section uses; the sections themselves are in parser.cpp,
// parser_rules.cpp, parser_approvals.cpp, parser_checks.cpp and parser_mcp.cpp.
#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "policy/key_text.hpp"
#include "policy/parser.hpp"
#include "policy/parser_sections.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

namespace airlock::policy {
namespace detail {

std::string emitted(const YAML::Node& node) {
  try {
    YAML::Emitter out;
    out << node;
    return out.good() ? std::string(out.c_str()) : std::string();
  } catch (const YAML::Exception&) {
    return {};  // then policy_diff falls back to the fields it knows
  }
}

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

namespace {

// Why `name` is not a DNS host name (RFC 1123 section 2.1: labels of letters, digits and '-',
// not starting or ending with '-', 63 bytes at most, 253 in all), or empty.
std::string_view host_name_problem(std::string_view name) {
  if (name.empty() || name.size() > 253) return "must be a host name of 1 to 253 characters";
  if (name.find_first_not_of("0123456789.") == std::string_view::npos)
    return "an IP address needs no entry: IP literals are always accepted";
  for (std::size_t start = 0; start <= name.size();) {
    const auto dot = std::min(name.find('.', start), name.size());
    const std::string_view label = name.substr(start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return "must be a host name (no port, no '*', no empty label, no trailing dot)";
    for (char c : label)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-'))
        return "must be a host name (no port, no '*', no empty label, no trailing dot)";
    start = dot + 1;
  }
  return {};
}

}  // namespace

void parser::host_names_into(const YAML::Node& n, const std::string& key,
                             std::vector<std::string>& out) {
  strings_into(n, key, out);
  if (!n.IsSequence()) return;
  std::size_t i = 0;
  for (auto it = n.begin(); it != n.end() && i < out.size(); ++it, ++i) {
    std::string& name = out[i];
    if (!it->IsScalar()) continue;  // strings_into reported it
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (const auto problem = host_name_problem(name); !problem.empty())
      error(*it, indexed(key, i), std::string(problem));
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
                           std::chrono::milliseconds& out, std::chrono::milliseconds min,
                           std::chrono::milliseconds max) {
  if (!expect(n, key, YAML::NodeType::Scalar, "a duration")) return;
  const auto v = core::parse_duration(n.Scalar());
  if (!v) {
    error(n, key,
          core::str_cat("invalid duration '", n.Scalar(), "' (e.g. 250ms, 5s, 2m, 1h; at most ",
                        duration_text(max), ")"));
    return;
  }
  if (*v < min) {
    error(n, key, core::str_cat("must be at least ", min.count(), "ms"));
    return;
  }
  if (*v > max) {
    error(n, key, core::str_cat("must be at most ", duration_text(max)));
    return;
  }
  out = *v;
}

std::string duration_text(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return core::str_cat(ms / 3'600'000, "h");
  if (ms != 0 && ms % 60'000 == 0) return core::str_cat(ms / 60'000, "m");
  if (ms != 0 && ms % 1'000 == 0) return core::str_cat(ms / 1'000, "s");
  return core::str_cat(ms, "ms");
}

std::optional<model::mode> parser::mode(const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) {
    if (n.Scalar() == "enforce") return model::mode::enforce;
    if (n.Scalar() == "report") return model::mode::report;
  }
  error(n, key, "expected enforce or report");
  return std::nullopt;
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

}  // namespace airlock::policy
