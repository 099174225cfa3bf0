#include "filters/approval/overlay.hpp"

#include "core/str_cat.hpp"
#include "filters/approval/approval_filter.hpp"
#include "policy/snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace airlock::filters::approval {
namespace {

// A YAML double-quoted scalar (YAML 1.2 section 7.3.1): backslash and quote escaped, control
// bytes as \xNN, so a name from the policy cannot break out of its string.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

std::uint64_t number_of(std::string_view name) {
  if (!name.starts_with(approved_rule_prefix)) return 0;
  name.remove_prefix(approved_rule_prefix.size());
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  return ec == std::errc{} && p == name.data() + name.size() ? n : 0;
}

std::string rule_text(const std::string& name, const std::string& host, std::string_view ports,
                      const std::vector<std::string>& methods) {
  std::string out = core::str_cat("  - name: ", quoted(name), "\n    hosts: [", quoted(host),
                                  "]\n    ports: [", ports, "]\n");
  if (!methods.empty()) {
    out += "    methods: [";
    for (std::size_t i = 0; i < methods.size(); ++i)
      out += core::str_cat(i ? ", " : "", quoted(methods[i]));
    out += "]\n";
  }
  return out;
}

std::string diff_lines(const std::string& before, const std::string& after) {
  auto lines = [](const std::string& text) {
    std::multiset<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      out.insert(line);
    return out;
  };
  auto a = lines(before), b = lines(after);
  std::string out;
  for (const auto& l : a)
    if (b.count(l) < a.count(l) && out.find("-" + l + "\n") == std::string::npos)
      out += core::str_cat("-", l, "\n");
  for (const auto& l : b)
    if (a.count(l) < b.count(l) && out.find("+" + l + "\n") == std::string::npos)
      out += core::str_cat("+", l, "\n");
  return out;
}

}  // namespace

overlay_change add_to_overlay(const policy::snapshot& current, const request_info& r,
                              bool same_method, const std::string& old_text) {
  overlay_change out;
  std::string rules;
  std::map<std::string, std::vector<std::string>> agents;  // agent -> approved rule names
  std::uint64_t last = 0;
  for (const auto& rule : current.rules()) {
    if (!rule.name.starts_with(approved_rule_prefix) || !rule.source) continue;
    const auto& src = *rule.source;
    last = std::max(last, number_of(rule.name));
    std::string ports;
    for (std::size_t i = 0; i < src.ports.size(); ++i)
      ports += core::str_cat(i ? ", " : "", static_cast<std::string>(src.ports[i]));
    rules +=
        rule_text(rule.name, src.hosts.empty() ? std::string() : src.hosts[0], ports, src.methods);
  }
  for (const auto& agent : current.agents())
    for (const auto* rule : agent.rules)
      if (rule->name.starts_with(approved_rule_prefix)) agents[agent.name].push_back(rule->name);
  out.rule_name = core::str_cat(approved_rule_prefix, last + 1);
  std::vector<std::string> methods;
  if (same_method && !r.connect && !r.access_request) methods.push_back(r.method);
  rules += rule_text(out.rule_name, r.host, std::to_string(r.port), methods);
  agents[r.agent].push_back(out.rule_name);
  out.text =
      "# Permanent approvals, written by airlock (approvals.overlay) and included by the\n"
      "# policy (include:). Rewritten at each permanent approval; the operator's own policy\n"
      "# file is never written.\n"
      "rules:\n" +
      rules + "agents:\n";
  for (const auto& [name, list] : agents) {
    out.text += core::str_cat("  ", quoted(name), ":\n    rules: [");
    for (std::size_t i = 0; i < list.size(); ++i)
      out.text += core::str_cat(i ? ", " : "", quoted(list[i]));
    out.text += "]\n";
  }
  out.diff = diff_lines(old_text, out.text);
  return out;
}

bool replace_file(const std::string& path, const std::string& text, std::string& error) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = core::str_cat("cannot write ", tmp, ": ", std::strerror(errno));
    return false;
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = core::str_cat("cannot write ", tmp, ": ", std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  // rename(2) replaces the file in one step: a reload never reads half of it.
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = core::str_cat("cannot replace ", path, ": ", std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string read_file_or_empty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace airlock::filters::approval
