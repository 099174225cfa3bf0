#include "proxy/policy_diff.hpp"

#include "core/str_cat.hpp"

#include <map>

namespace airlock::proxy {
namespace {

void append_list(std::string& out, const std::vector<std::string>& items) {
  out += '[';
  for (const auto& i : items)
    out += core::str_cat(i, ',');
  out += ']';
}

// Everything a rule says, in one string: equal strings mean equal rules. The rule as written
// (every key, those added since included); the fields below only when it could not be
// emitted.
std::string fingerprint(const policy::model::rule& r) {
  if (!r.source.empty()) return r.source;
  std::string f;
  for (const auto* list :
       {&r.hosts, &r.host_regex, &r.methods, &r.paths, &r.upgrades, &r.addresses, &r.allow_cidrs})
    append_list(f, *list);
  for (auto p : r.ports)
    f += core::str_cat(p, ',');
  f += '|';
  for (auto s : r.schemes)
    f += core::str_cat(static_cast<int>(s), ',');
  for (const auto& b : r.binaries)
    f += core::str_cat(b.path, ':', b.sha256, ',');
  f +=
      core::str_cat('|', r.inspect, '|',
                    r.mode ? (*r.mode == policy::model::mode::report ? "report" : "enforce") : "-");
  return f;
}

std::string fingerprint(const policy::model::agent& a) {
  if (!a.source.empty()) return a.source;
  std::string f;
  append_list(f, a.rules);
  append_list(f, a.sources);
  f += a.token_sha256;  // a hash, and never logged: only compared
  return f;
}

std::string fingerprint(const policy::model::operator_token& o) {
  return o.token_sha256;  // a hash, and never logged: only compared
}

template <class Items>
void compare(std::string& out, std::string_view kind, const Items& before, const Items& after) {
  std::map<std::string, std::string> old_items, new_items;
  for (const auto& i : before)
    old_items[i.name] = fingerprint(i);
  for (const auto& i : after)
    new_items[i.name] = fingerprint(i);
  std::string added, removed, modified;
  auto add = [](std::string& list, const std::string& name) {
    list += core::str_cat(list.empty() ? "" : ",", name);
  };
  for (const auto& [name, f] : new_items) {
    auto it = old_items.find(name);
    if (it == old_items.end())
      add(added, name);
    else if (it->second != f)
      add(modified, name);
  }
  for (const auto& [name, f] : old_items)
    if (!new_items.count(name)) add(removed, name);
  auto section = [&](std::string_view what, const std::string& list) {
    if (!list.empty()) out += core::str_cat(out.empty() ? "" : "; ", kind, ' ', what, ": ", list);
  };
  section("added", added);
  section("removed", removed);
  section("modified", modified);
}

}  // namespace

std::string describe_changes(const policy::snapshot& before, const policy::snapshot& after) {
  std::string out;
  compare(out, "rules", before.model().rules, after.model().rules);
  compare(out, "agents", before.model().agents, after.model().agents);
  compare(out, "operators", before.model().operators, after.model().operators);
  return out;
}

std::string listen_changes(const policy::model::listen& bound, const policy::model::listen& next,
                           bool proxy_overridden, bool admin_overridden) {
  std::string out;
  auto note = [&out](std::string_view key, const std::string& was, const std::string& now) {
    if (was == now) return;
    out += core::str_cat(out.empty() ? "" : "; ", key, ' ', was.empty() ? "(none)" : was, " -> ",
                         now.empty() ? "(none)" : now);
  };
  if (!proxy_overridden) note("listen.proxy", bound.proxy, next.proxy);
  note("listen.relay", bound.relay, next.relay);
  note("listen.relay_group", bound.relay_group, next.relay_group);
  if (!admin_overridden) note("listen.admin", bound.admin, next.admin);
  auto joined = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
      out += core::str_cat(out.empty() ? "" : ",", n);
    return out;
  };
  note("listen.admin_hosts", joined(bound.admin_hosts), joined(next.admin_hosts));
  return out;
}

}  // namespace airlock::proxy
