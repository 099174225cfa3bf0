#include "filters/approval/overlay.hpp"

#include "core/str_cat.hpp"
#include "filters/approval/approval_filter.hpp"
#include "filters/approval/overlay_text.hpp"
#include "policy/snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace airlock::filters::approval {
namespace {

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
  if (r.redacted) {
    // DLP replaced what it found in the host or the method: the operator never saw the
    // target, and a rule for the redacted name would stand for every name redacted so.
    out.error =
        "the held request's host or method carries what DLP redacted; approve it once, "
        "or write the rule by hand";
    return out;
  }
  // A name neither the policy in force nor the file (edited since, perhaps) uses.
  std::uint64_t last = last_approved_number(old_text);
  for (const auto& rule : current.rules())
    last = std::max(last, approved_number(rule.name));
  overlay_addition add;
  add.rule_name = out.rule_name = core::str_cat(approved_rule_prefix, last + 1);
  add.agent = r.agent;
  add.fields = {{"name", yaml_quoted(add.rule_name)},
                {"hosts", core::str_cat("[", yaml_quoted(r.host), "]")},
                {"ports", core::str_cat("[", r.port, "]")}};
  if (same_method && !r.connect && !r.access_request)
    add.fields.emplace_back("methods", core::str_cat("[", yaml_quoted(r.method), "]"));
  out.text = append_to_overlay(old_text, add, out.error);
  if (out.error.empty()) out.diff = diff_lines(old_text, out.text);
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
