#pragma once
// Internal to build_plan (plan.cpp, plan_mounts.cpp): the planner runs the plan's steps in
// order over the plan being built and what they share.

#include "launcher/plan.hpp"
#include "launcher/plan_paths.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher::plan_detail {

// How many components deep a canonical path is ("/" is 0).
inline std::size_t depth(std::string_view path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/')) -
         (path == "/" ? 1 : 0);
}

struct hidden_path {
  std::string path;  // canonical
  bool is_dir;
  std::string why;       // for messages
  bool missing = false;  // not there yet: its mount point is made (mount_step::make_point)
};

struct exposed {
  std::string what;  // "--rw", "--ro", "the work directory"
  std::string path;  // canonical
  bool writable = false;
  bool is_dir = true;
};

// The steps of build_plan, in order, over the plan being built and what they share. Each
// returns "" or the one-line error that stops the plan.
class planner {
 public:
  planner(const options& opts, const host_facts& facts) : o(opts), host(facts) {}

  plan_result build() {
    using step = std::string (planner::*)();
    for (step s :
         {&planner::check_command, &planner::set_command_and_ids, &planner::expose_work_directory,
          &planner::expose_paths, &planner::choose_home, &planner::hide_host_secrets,
          &planner::add_mount_steps, &planner::set_environment, &planner::set_limits}) {
      if (auto e = (this->*s)(); !e.empty()) return {std::nullopt, std::move(e)};
    }
    return {std::move(p), {}};
  }

 private:
  std::string check_command();
  std::string set_command_and_ids();
  std::string expose_work_directory();
  std::string expose_paths();
  std::string choose_home();
  std::string hide_host_secrets();
  std::string add_mount_steps();
  std::string set_environment();
  std::string set_limits();

  // A path to bind, canonical, or why it cannot be bound.
  struct resolved {
    std::optional<exposed> value;
    std::string why;
    explicit operator bool() const { return value.has_value(); }
    const exposed* operator->() const { return &*value; }
    const exposed& operator*() const { return *value; }
  };
  resolved resolve(const std::string& what, const std::string& raw, bool writable) const;
  std::vector<jail_root> writable_roots() const;
  std::string check_links(const named_path& named, const std::string& canonical,
                          const std::vector<jail_root>& in) const;
  void add_hidden(const std::string& canon, std::string why);
  void hide_missing_in_home(const std::string& builtin, const std::string& path);
  hide_context hide_needs() const;

  const options& o;
  const host_facts& host;
  plan p;
  std::vector<exposed> binds;    // the work directory, --rw, --ro, --home (canonical)
  std::vector<jail_root> roots;  // where a jailed run may have planted links
  std::vector<hidden_path> hidden;
};

}  // namespace airlock::launcher::plan_detail
