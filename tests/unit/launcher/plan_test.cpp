#include "launcher/plan.hpp"

#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace airlock::launcher {
namespace {

// A fake file system: path -> is directory; symlinks map a path prefix to its target.
struct fake_fs {
  std::map<std::string, bool> files = {
      {"/", true},
      {"/home", true},
      {"/home/u", true},
      {"/home/u/proj", true},
      {"/home/u/proj/.git", true},
      {"/home/u/.ssh", true},
      {"/home/u/.aws", true},
      {"/home/u/.netrc", false},
      {"/etc", true},
      {"/etc/shadow", false},
      {"/srv", true},
      {"/srv/data", true},
      {"/srv/secret", true},
      {"/srv/secret/inner", true},
      {"/srv/ca", true},
      {"/srv/ca/ca.crt", false},
      {"/srv/ca/ca.key", false},
      {"/tmp", true},
      {"/tmp/priv", true},
      {"/proc", true},
      {"/proc/1", true},
      {"/srv/data/cache", true},
      {"/usr", true},
      {"/usr/local", true},
      {"/var", true},
      {"/var/lib", true},
      {"/var/lib/app", true},
      {"/var/lib/app/workspace", true},
      {"/var/lib/dpkg", true},
      {"/var/lib/dpkg/info", true},
      {"/usr/src", true},
      {"/usr/src/app", true},
      {"/var/www", true},
      {"/lib64", true},
      {"/root", true},
      {"/root/proj", true},
  };
  std::map<std::string, std::string> links = {{"/home/u/proj/link", "/srv/secret/inner"},
                                              {"/home/u/proj/up", "/"},
                                              {"/srv/data/home", "/home/u"},
                                              {"/srv/data/link", "/srv/secret/inner"},
                                              {"/home/u/proj/deps", "/srv/data"}};

  std::optional<std::string> canonical(const std::string& path) const {
    std::string p = path;
    // Resolve "." and ".." lexically (enough for these tests), then one level of links.
    std::vector<std::string> parts;
    std::size_t pos = 1;
    while (pos <= p.size()) {
      auto next = p.find('/', pos);
      if (next == std::string::npos) next = p.size();
      std::string part = p.substr(pos, next - pos);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      pos = next + 1;
    }
    std::string out;
    for (const auto& part : parts) {
      out += "/" + part;
      if (auto it = links.find(out); it != links.end()) out = it->second == "/" ? "" : it->second;
    }
    if (out.empty()) out = "/";
    if (!files.count(out)) return std::nullopt;
    return out;
  }
};

class LauncherPlan : public ::testing::Test {
 protected:
  host_facts host() {
    host_facts h;
    h.uid = 1000;
    h.gid = 1000;
    h.cwd = "/home/u/proj";
    h.home = "/home/u";
    h.environ = {"PATH=/usr/bin", "GITHUB_TOKEN=x"};
    h.canonical = [this](const std::string& p) { return fs_.canonical(p); };
    h.is_dir = [this](const std::string& p) {
      auto it = fs_.files.find(p);
      return it != fs_.files.end() && it->second;
    };
    return h;
  }
  options opts() {
    options o;
    o.command = {"curl", "https://example.org"};
    return o;
  }
  static std::vector<const mount_step*> of_kind(const plan& p, mount_kind k) {
    std::vector<const mount_step*> out;
    for (const auto& s : p.mounts) {
      if (s.kind == k) out.push_back(&s);
    }
    return out;
  }
  static std::size_t index_of(const plan& p, mount_kind k, const std::string& target) {
    for (std::size_t i = 0; i < p.mounts.size(); ++i) {
      if (p.mounts[i].kind == k && p.mounts[i].target == target) return i;
    }
    return p.mounts.size();
  }
  fake_fs fs_;
};

TEST_F(LauncherPlan, DefaultPlanShape) {
  auto r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  const plan& p = *r.value;
  EXPECT_EQ(p.clone_flags, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                               CLONE_NEWIPC | CLONE_NEWUTS);
  EXPECT_EQ(p.inside_uid, 1000u);
  EXPECT_EQ(p.outside_uid, 1000u);
  EXPECT_TRUE(p.deny_setgroups);
  EXPECT_EQ(p.workdir, "/home/u/proj");
  EXPECT_EQ(p.argv, (std::vector<std::string>{"curl", "https://example.org"}));

  // Order: propagation first, read-only root next, pivot_root last; proc before its masks;
  // the work directory before the hides; hides before the final read-only remounts.
  ASSERT_GE(p.mounts.size(), 10u);
  EXPECT_EQ(p.mounts.front().kind, mount_kind::private_propagation);
  EXPECT_EQ(p.mounts[1].kind, mount_kind::root_ro);
  EXPECT_EQ(p.mounts.back().kind, mount_kind::pivot_root);
  EXPECT_LT(index_of(p, mount_kind::proc, "/proc"),
            index_of(p, mount_kind::protect_ro, "/proc/sys"));
  EXPECT_LT(index_of(p, mount_kind::tmpfs, "/run"), index_of(p, mount_kind::trust, "/run/airlock"));
  const auto work = index_of(p, mount_kind::bind, "/home/u/proj");
  ASSERT_LT(work, p.mounts.size());
  EXPECT_TRUE(p.mounts[work].writable);
  EXPECT_LT(work, index_of(p, mount_kind::hide, "/home/u/.ssh"));
  EXPECT_LT(index_of(p, mount_kind::hide, "/home/u/.ssh"),
            index_of(p, mount_kind::remount_ro, "/run"));
  EXPECT_LT(index_of(p, mount_kind::remount_ro, "/dev"), p.mounts.size() - 1);

  auto tmpfs = of_kind(p, mount_kind::tmpfs);
  ASSERT_EQ(tmpfs.size(), 2u);
  EXPECT_EQ(tmpfs[0]->target, "/tmp");
  EXPECT_EQ(tmpfs[0]->data, "mode=1777,size=1073741824,nr_inodes=262144");  // --tmpfs-size default
  EXPECT_EQ(tmpfs[1]->target, "/run");

  // Built-in secrets that exist are hidden; in /etc those that do not are not mentioned (in
  // the home's layer they are: HiddenHomePathsThatDoNotExistYet).
  EXPECT_NE(std::find(p.hidden.begin(), p.hidden.end(), "/home/u/.ssh"), p.hidden.end());
  EXPECT_NE(std::find(p.hidden.begin(), p.hidden.end(), "/home/u/.aws"), p.hidden.end());
  EXPECT_NE(std::find(p.hidden.begin(), p.hidden.end(), "/home/u/.netrc"), p.hidden.end());
  EXPECT_NE(std::find(p.hidden.begin(), p.hidden.end(), "/etc/shadow"), p.hidden.end());
  EXPECT_EQ(std::find(p.hidden.begin(), p.hidden.end(), "/etc/sudoers"), p.hidden.end());
  for (const auto* h : of_kind(p, mount_kind::hide)) {
    if (h->target == "/home/u/.netrc" || h->target == "/etc/shadow") {
      EXPECT_FALSE(h->is_dir);
    }
    if (h->target == "/home/u/.ssh") {
      EXPECT_TRUE(h->is_dir);
    }
  }

  // Environment: scrubbed, proxied, limits and relay carried through.
  EXPECT_EQ(std::count(p.env.entries.begin(), p.env.entries.end(), "GITHUB_TOKEN=x"), 0);
  EXPECT_EQ(
      std::count(p.env.entries.begin(), p.env.entries.end(), "HTTPS_PROXY=http://127.0.0.1:3128"),
      1);
  EXPECT_EQ(p.relay.proxy, "127.0.0.1:3128");
  EXPECT_FALSE(p.limits.pids);
}

TEST_F(LauncherPlan, RootKeepsSetgroups) {
  auto h = host();
  h.uid = 0;
  h.gid = 0;
  auto r = build_plan(opts(), h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_FALSE(r.value->deny_setgroups);
  EXPECT_EQ(r.value->inside_uid, 0u);
}

TEST_F(LauncherPlan, BindsSortedParentsFirstAndRelativePaths) {
  auto o = opts();
  o.ro = {".git"};  // relative to the work directory; nested in it
  o.rw = {"/srv/data"};
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  auto binds = of_kind(*r.value, mount_kind::bind);
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[0]->target, "/srv/data");
  EXPECT_EQ(binds[1]->target, "/home/u/proj");
  EXPECT_EQ(binds[2]->target, "/home/u/proj/.git");
  EXPECT_FALSE(binds[2]->writable);
  EXPECT_TRUE(binds[0]->writable);
}

TEST_F(LauncherPlan, HiddenPathsCannotBeReexposed) {
  struct tc {
    std::vector<std::string> hide, ro, rw;
    std::optional<std::string> workdir;
  };
  const std::vector<tc> cases = {
      {{"/srv/secret"}, {"/srv/secret"}, {}, {}},          // exactly
      {{"/srv/secret"}, {}, {"/srv/secret/inner"}, {}},    // below
      {{"/srv/secret"}, {"/srv/data/link"}, {}, {}},       // through a symlink
      {{"/srv/secret"}, {"/srv/data/../secret"}, {}, {}},  // through ..
      {{"/srv/secret"}, {}, {}, {"/srv/secret/inner"}},    // as the work directory
      {{"/home/u"}, {}, {}, {}},                           // hides the work directory
      {{}, {"/home/u/.ssh"}, {}, {}},                      // built-in secret
  };
  for (const auto& c : cases) {
    auto o = opts();
    o.hide = c.hide;
    o.ro = c.ro;
    o.rw = c.rw;
    o.workdir = c.workdir;
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << (c.ro.empty() ? "" : c.ro[0]) << (c.rw.empty() ? "" : c.rw[0]);
    EXPECT_NE(r.error.find("inside hidden path"), std::string::npos) << r.error;
  }
  // A hidden directory inside an exposed one is fine: the hide lands on top.
  auto o = opts();
  o.rw = {"/srv"};
  o.hide = {"/srv/secret"};
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_GT(index_of(*r.value, mount_kind::hide, "/srv/secret"),
            index_of(*r.value, mount_kind::bind, "/srv"));
}

TEST_F(LauncherPlan, RefusesDangerousOrMissingBinds) {
  for (auto [rw, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/", "refusing to expose /"},
           {"/home/u/proj/up", "refusing to expose /"},  // a symlink to /
           {"/proc/1", "refusing to bind /proc/1"},
           {"/nonexistent", "no such file"}}) {
    auto o = opts();
    o.rw = {rw};
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << rw;
    EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
  }
  auto o = opts();
  o.workdir = "/etc/shadow";
  EXPECT_NE(build_plan(o, host()).error.find("not a directory"), std::string::npos);
  o = opts();
  o.hide = {"/"};
  EXPECT_FALSE(build_plan(o, host()).value);
  o = opts();
  o.proxy = "proxy.internal:3128";
  EXPECT_NE(build_plan(o, host()).error.find("--proxy"), std::string::npos);
  o = opts();
  o.java_truststore = true;  // no keytool in the fake host
  EXPECT_NE(build_plan(o, host()).error.find("keytool"), std::string::npos);
  o = opts();
  o.home = "/nowhere";
  EXPECT_NE(build_plan(o, host()).error.find("--home"), std::string::npos);
  o.home = "/proc/1";
  EXPECT_FALSE(build_plan(o, host()).value);
  o.home = "/home/u/.ssh";  // a hidden path as the home would show what it hides
  EXPECT_NE(build_plan(o, host()).error.find("hidden"), std::string::npos);
}

// The work directory is bound writable: never the home (dotfiles), an ancestor of it, or a
// system directory, also when reached through a symlink.
TEST_F(LauncherPlan, WorkDirectoryIsNeitherHomeNorSystem) {
  for (auto [dir, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/home/u", "is your home directory"},
           {"/srv/data/home", "(/home/u) is your home directory"},  // a symlink to the home
           {"/home", "contains your home directory /home/u"},
           {"/etc", "is a system directory"},
           {"/usr/local", "below the system directory /usr"},
           {"/var/lib/app", "/var/lib/app is a system directory"},  // a service's own
           {"/var/lib/dpkg/info", "below the system directory /var/lib/dpkg"},
           {"/var/lib", "is a system directory"},
           {"/usr/src", "is a system directory"},
           {"/var", "is a system directory"},
           {"/lib64", "is a system directory"},
           {"/srv", "is a system directory"},
           {"/root", "is a system directory"}}) {
    auto o = opts();
    o.workdir = dir;
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << dir;
    EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("--workdir DIR"), std::string::npos) << r.error;
  }
  // The default (the current directory) is checked the same way.
  auto h = host();
  h.cwd = "/home/u";
  EXPECT_NE(build_plan(opts(), h).error.find("is your home directory"), std::string::npos);
  // The password database's home counts too, whatever $HOME says.
  h.home = "/srv/data";
  h.passwd_home = "/home/u";
  EXPECT_NE(build_plan(opts(), h).error.find("is your home directory"), std::string::npos);
  // Root's home is refused for root.
  h = host();
  h.uid = 0;
  h.home = "/root";
  h.cwd = "/root";
  EXPECT_NE(build_plan(opts(), h).error.find("home directory"), std::string::npos);
  // Project directories below the home, /srv, /var or /root are fine, and so are service
  // workspaces: Docker's usual WORKDIR, a CI agent's builds below its /var/lib directory.
  for (const std::string dir : {"/home/u/proj", "/srv/data", "/var/www", "/tmp/priv",
                                "/usr/src/app", "/var/lib/app/workspace"}) {
    auto o = opts();
    o.workdir = dir;
    auto r = build_plan(o, host());
    EXPECT_TRUE(r.value) << dir << ": " << r.error;
  }
  h.cwd = "/root/proj";
  EXPECT_TRUE(build_plan(opts(), h).value);
}

// A --rw/--ro path named inside the work directory must still be inside it once symlinks are
// followed: an earlier jailed run may have replaced deps/ by a link (finding 5).
TEST_F(LauncherPlan, PathsNamedInTheWorkDirectoryDoNotFollowLinksOut) {
  for (auto [opt, path, link] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--rw", "deps/cache", "/home/u/proj/deps leads to /srv/data"},
           {"--ro", "/home/u/proj/deps/cache", "/home/u/proj/deps leads to /srv/data"},
           {"--rw", "deps", "/home/u/proj/deps leads to /srv/data"},
           {"--ro", "link", "/home/u/proj/link leads to /srv/secret/inner"},
           {"--rw", "../proj/deps/cache", "deps leads to /srv/data"}}) {
    auto o = opts();
    (opt == "--rw" ? o.rw : o.ro) = {path};
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << path;
    EXPECT_NE(r.error.find(link), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(opt), std::string::npos) << r.error;
  }
  // Named outside the work directory, the same target is taken as it is.
  auto o = opts();
  o.rw = {"/srv/data/cache"};
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  // Also when the work directory is given through a symlink of its own.
  o = opts();
  o.workdir = "/srv/data/home/proj";
  o.ro = {"/srv/data/home/proj/.git"};
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  o.ro = {"/srv/data/home/proj/deps/cache"};
  EXPECT_NE(build_plan(o, host()).error.find("deps leads to /srv/data"), std::string::npos);
}

// Another spelling of a path inside the work directory changes nothing: a symlinked ancestor
// (the shell's logical $PWD), /proc/self/cwd, an alias of the project. --workdir and --home
// named below the current directory are checked the same way.
TEST_F(LauncherPlan, PlantedLinksRefusedWhateverTheSpelling) {
  fs_.links["/srv/alias"] = "/home/u";
  fs_.links["/srv/proj-alias"] = "/home/u/proj";
  fs_.links["/proc/self"] = "/proc/1";
  fs_.links["/proc/1/cwd"] = "/home/u/proj";
  fs_.links["/home/u/proj/.agent-home"] = "/srv/data";
  for (auto [opt, path] :
       std::vector<std::pair<std::string, std::string>>{{"--rw", "/srv/alias/proj/deps/cache"},
                                                        {"--rw", "/proc/self/cwd/deps/cache"},
                                                        {"--ro", "/srv/proj-alias/deps/cache"},
                                                        {"--workdir", "deps"},
                                                        {"--workdir", "/srv/proj-alias/deps/cache"},
                                                        {"--home", ".agent-home"},
                                                        {"--home", "/proc/self/cwd/deps/cache"}}) {
    auto o = opts();
    if (opt == "--rw") o.rw = {path};
    if (opt == "--ro") o.ro = {path};
    if (opt == "--workdir") o.workdir = path;
    if (opt == "--home") o.home = path;
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << opt << ' ' << path;
    EXPECT_NE(r.error.find(opt + ' ' + path + ": "), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(" leads to /srv/data, outside the "), std::string::npos) << r.error;
  }
  // ".." is not a link: the parent and a sibling project can be named.
  fs_.files["/home/u/sibling"] = true;
  fs_.links["/home/u/proj/inside"] = "/home/u/proj/.git";
  for (const std::string path : {"..", "../sibling", "inside", "/proc/self/cwd/.git"}) {
    auto o = opts();
    o.ro = {path};
    auto r = build_plan(o, host());
    EXPECT_TRUE(r.value) << path << ": " << r.error;
  }
  // A link in a directory that is no work directory (the home, as the current directory
  // cannot be one) is followed: `airlock run --workdir proj-link` from the home.
  fs_.links["/home/u/proj-link"] = "/srv/data";
  auto h = host();
  h.cwd = "/home/u";
  auto o = opts();
  o.workdir = "proj-link";
  auto r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->workdir, "/srv/data");
}

// --home DIR is bound writable: refused where the work directory would be.
TEST_F(LauncherPlan, HomeDirectoryIsNeitherHomeNorSystem) {
  for (auto [dir, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/etc", "--home /etc is a system directory"},
           {"/home/u", "--home /home/u is your home directory"},
           {"/home", "--home /home contains your home directory"},
           {"/var/lib/dpkg", "--home /var/lib/dpkg is a system directory"},
           {"/tmp", "--home /tmp is a system directory"}}) {
    auto o = opts();
    o.home = dir;
    auto r = build_plan(o, host());
    EXPECT_FALSE(r.value) << dir;
    EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
  }
}

// --policy's files are hidden by directory, so that a file replaced by rename stays hidden;
// a secret's directory that holds the work directory is refused (finding 3).
TEST_F(LauncherPlan, PolicyFilesHiddenByDirectory) {
  fs_.files["/srv/ca/pol.yaml"] = false;
  fs_.files["/home/u/proj/sec"] = true;
  fs_.files["/home/u/proj/sec/tok"] = false;
  fs_.files["/home/u/proj/pol.yaml"] = false;
  fs_.links["/srv/data/tok"] = "/home/u/proj/sec/tok";
  auto hidden = [](const plan& p, const std::string& path) {
    return std::find(p.hidden.begin(), p.hidden.end(), path) != p.hidden.end();
  };
  auto o = opts();
  o.hide_dir_of = {{"/srv/ca/ca.key", "tls.ca_key", true},
                   {"/srv/ca/pol.yaml", "--policy", false},
                   {"sec/tok", "secret t", true},        // relative: against the cwd
                   {"/srv/data/tok", "secret l", true},  // a link: both directories
                   {"/srv/secret/missing", "secret m", true}};
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  for (const char* d : {"/srv/ca", "/home/u/proj/sec", "/srv/data", "/srv/secret"})
    EXPECT_TRUE(hidden(*r.value, d)) << d;
  EXPECT_FALSE(hidden(*r.value, "/srv/ca/ca.key"));

  // A secret in the work directory itself: refused, naming the secret and the directory.
  o = opts();
  o.hide_dir_of = {{"/home/u/proj/pol.yaml", "secret s of --policy p", true}};
  r = build_plan(o, host());
  ASSERT_FALSE(r.value);
  EXPECT_NE(r.error.find("secret s of --policy p is /home/u/proj/pol.yaml, in /home/u/proj, "
                         "which holds the work directory /home/u/proj"),
            std::string::npos)
      << r.error;
  // ... or in a directory above it, or above a --ro path.
  o.hide_dir_of = {{"/home/u/x.key", "tls.ca_key", true}};
  EXPECT_NE(build_plan(o, host()).error.find("which holds the work directory"), std::string::npos);
  o = opts();
  o.ro = {"/srv/data"};
  o.hide_dir_of = {{"/srv/data/x.key", "secret x", true}};
  EXPECT_NE(build_plan(o, host()).error.find("which holds --ro /srv/data"), std::string::npos);
  // Not a secret (the policy file, the audit log): only the file is hidden then.
  o = opts();
  o.hide_dir_of = {{"/home/u/proj/pol.yaml", "--policy", false}};
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(hidden(*r.value, "/home/u/proj/pol.yaml"));
  EXPECT_FALSE(hidden(*r.value, "/home/u/proj"));
}

// A directory the jail needs (its own /tmp or /run, /etc, the home, --home DIR) is never
// hidden whole: only the file is; a secret there is refused unless the jail cannot see the
// host's directory at all.
TEST_F(LauncherPlan, PolicyFilesInSharedDirectories) {
  for (const char* f : {"/tmp/pol.yaml", "/tmp/tok", "/etc/audit.log", "/etc/tok",
                        "/home/u/pol.yaml", "/home/u/tok", "/srv/data/pol.yaml", "/srv/data/tok"})
    fs_.files[f] = false;
  auto hidden = [](const plan& p, const std::string& path) {
    return std::find(p.hidden.begin(), p.hidden.end(), path) != p.hidden.end();
  };
  auto h = host();
  h.cwd = "/srv/secret";  // a work directory outside the home
  auto o = opts();
  o.hide_dir_of = {{"/tmp/pol.yaml", "--policy", false},
                   {"/tmp/tok", "secret t", true},
                   {"/etc/audit.log", "audit.path", false},
                   {"/home/u/pol.yaml", "--policy", false}};
  o.ca_key = "/tmp/tok";
  auto r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  for (const char* d : {"/tmp", "/etc", "/home/u"})
    EXPECT_FALSE(hidden(*r.value, d)) << d;
  for (const char* f : {"/tmp/pol.yaml", "/tmp/tok", "/etc/audit.log", "/home/u/pol.yaml"})
    EXPECT_TRUE(hidden(*r.value, f)) << f;

  for (auto [file, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/etc/tok", "in /etc, which is a system directory: the jail needs that directory"},
           {"/home/u/tok", "in /home/u, which holds the home /home/u: the jail needs"}}) {
    o = opts();
    o.hide_dir_of = {{file, "secret s", true}};
    r = build_plan(o, h);
    EXPECT_FALSE(r.value) << file;
    EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
  }
  // --home DIR is known before the hides: the policy beside it is hidden as a file, a secret
  // refused.
  o = opts();
  o.home = "/srv/data";
  o.hide_dir_of = {{"/srv/data/pol.yaml", "--policy", false}};
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(hidden(*r.value, "/srv/data/pol.yaml"));
  EXPECT_FALSE(hidden(*r.value, "/srv/data"));
  o.hide_dir_of = {{"/srv/data/tok", "secret s", true}};
  EXPECT_NE(build_plan(o, host()).error.find("which holds --home /srv/data"), std::string::npos);
}

// Variables a --policy reads secrets from leave the environment, whatever their names.
TEST_F(LauncherPlan, PolicySecretVariablesRemoved) {
  auto h = host();
  h.environ = {"PATH=/usr/bin", "UPSTREAM_BEARER=v", "PLAIN_NAME=s", "KEEP=k"};
  auto o = opts();
  o.env_remove = {"UPSTREAM_BEARER", "PLAIN_NAME", "UNSET"};
  auto r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  const auto& e = r.value->env.entries;
  EXPECT_EQ(std::count(e.begin(), e.end(), "KEEP=k"), 1);
  for (const auto& entry : e) {
    EXPECT_FALSE(entry.starts_with("UPSTREAM_BEARER=")) << entry;
    EXPECT_FALSE(entry.starts_with("PLAIN_NAME=")) << entry;
  }
  const auto& d = r.value->env.dropped;
  EXPECT_NE(std::find(d.begin(), d.end(), "PLAIN_NAME"), d.end());
  // --env still passes one on purpose.
  o.env = {"PLAIN_NAME"};
  r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(std::count(r.value->env.entries.begin(), r.value->env.entries.end(), "PLAIN_NAME=s"),
            1);
}

TEST_F(LauncherPlan, CaKeyDirectoryHidden) {
  auto o = opts();
  o.ca = "/srv/ca/ca.crt";
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->trust.airlock_ca, "/srv/ca/ca.crt");
  // ca.key next to the certificate: the whole directory goes.
  EXPECT_NE(std::find(r.value->hidden.begin(), r.value->hidden.end(), "/srv/ca"),
            r.value->hidden.end());

  // When the key's directory is (or contains) the work directory, only the key is hidden.
  o = opts();
  o.ca_key = "/srv/ca/ca.key";
  o.workdir = "/srv/ca";
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_NE(std::find(r.value->hidden.begin(), r.value->hidden.end(), "/srv/ca/ca.key"),
            r.value->hidden.end());
  EXPECT_EQ(std::find(r.value->hidden.begin(), r.value->hidden.end(), "/srv/ca"),
            r.value->hidden.end());

  o = opts();
  o.ca = "/srv/ca/missing.crt";
  EXPECT_FALSE(build_plan(o, host()).value);
}

TEST_F(LauncherPlan, LimitsAndRelay) {
  auto o = opts();
  o.pids = 10;
  o.memory_bytes = 64 << 20;
  o.cpu_millis = 500;
  o.timeout = std::chrono::seconds(5);
  o.agent = "coder";
  o.proxy_protocol = true;
  o.relay_port = 9000;
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->limits.pids, 11u);  // + the jail's init
  EXPECT_EQ(r.value->limits.memory_bytes, 64u << 20);
  EXPECT_EQ(r.value->limits.cpu_millis, 500u);
  EXPECT_EQ(r.value->limits.timeout, std::chrono::seconds(5));
  EXPECT_EQ(r.value->relay.agent, "coder");
  EXPECT_TRUE(r.value->relay.proxy_protocol);
  EXPECT_EQ(r.value->relay.port, 9000);
  EXPECT_EQ(std::count(r.value->env.entries.begin(), r.value->env.entries.end(),
                       "http_proxy=http://127.0.0.1:9000"),
            1);
}

TEST_F(LauncherPlan, CaptureAndItsResolvConf) {
  // Default: on (where the jail can have it), with the jail's resolv.conf among the mounts,
  // after the binds and before the hides.
  auto r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(r.value->capture.enabled);
  EXPECT_FALSE(r.value->capture.required);
  const auto resolv = index_of(*r.value, mount_kind::resolv_conf, "/etc/resolv.conf");
  ASSERT_LT(resolv, r.value->mounts.size());
  EXPECT_FALSE(r.value->mounts[resolv].is_dir);
  EXPECT_TRUE(r.value->mounts[resolv].optional);
  EXPECT_LT(index_of(*r.value, mount_kind::bind, "/home/u/proj"), resolv);
  EXPECT_LT(resolv, index_of(*r.value, mount_kind::hide, "/home/u/.ssh"));

  // A resolv.conf that is a link (systemd-resolved's stub) is replaced where it leads.
  fs_.files["/run"] = true;
  fs_.files["/run/systemd/resolve/stub-resolv.conf"] = false;
  fs_.links["/etc/resolv.conf"] = "/run/systemd/resolve/stub-resolv.conf";
  auto linked = build_plan(opts(), host());
  ASSERT_TRUE(linked.value) << linked.error;
  EXPECT_EQ(linked.value->capture.resolv_conf, "/run/systemd/resolve/stub-resolv.conf");
  EXPECT_LT(
      index_of(*linked.value, mount_kind::resolv_conf, "/run/systemd/resolve/stub-resolv.conf"),
      index_of(*linked.value, mount_kind::remount_ro, "/run"));

  auto o = opts();
  o.capture = capture_mode::on;
  auto on = build_plan(o, host());
  ASSERT_TRUE(on.value);
  EXPECT_TRUE(on.value->capture.required);
  o.capture = capture_mode::off;
  auto off = build_plan(o, host());
  ASSERT_TRUE(off.value);
  EXPECT_FALSE(off.value->capture.enabled);
  EXPECT_TRUE(of_kind(*off.value, mount_kind::resolv_conf).empty());
}

TEST_F(LauncherPlan, RelaySocketOfTheProxyIsOutOfReach) {
  auto o = opts();
  o.agent = "coder";
  o.proxy_protocol = true;
  // On the host's file system: its directory is hidden (like the CA key's).
  fs_.files["/srv/airlock"] = true;
  o.proxy = "unix:/srv/airlock/relay.sock";
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_LT(index_of(*r.value, mount_kind::hide, "/srv/airlock"), r.value->mounts.size());
  // Its directory holds something the jail needs: just the socket.
  o.rw = {"/srv/data"};
  o.proxy = "unix:/srv/relay.sock";
  auto only = build_plan(o, host());
  ASSERT_TRUE(only.value) << only.error;
  const auto at = index_of(*only.value, mount_kind::hide, "/srv/relay.sock");
  ASSERT_LT(at, only.value->mounts.size());
  EXPECT_FALSE(only.value->mounts[at].is_dir);
  EXPECT_EQ(index_of(*only.value, mount_kind::hide, "/srv"), only.value->mounts.size());
  o.rw.clear();
  // Under /tmp or /run the jail has its own: nothing to hide.
  o.proxy = "unix:/tmp/priv/relay.sock";
  auto tmp = build_plan(o, host());
  ASSERT_TRUE(tmp.value) << tmp.error;
  EXPECT_EQ(index_of(*tmp.value, mount_kind::hide, "/tmp/priv/relay.sock"),
            tmp.value->mounts.size());
  // Inside the work directory the command could reach it: refused.
  o.proxy = "unix:/home/u/proj/relay.sock";
  auto inside = build_plan(o, host());
  EXPECT_FALSE(inside.value);
  EXPECT_NE(inside.error.find("where the command could reach it"), std::string::npos);
  // Through a symlink into the work directory: refused all the same.
  fs_.links["/srv/back"] = "/home/u/proj";
  o.proxy = "unix:/srv/back/relay.sock";
  auto linked = build_plan(o, host());
  EXPECT_FALSE(linked.value);
  // A directory that does not exist, a relative path.
  o.proxy = "unix:/nowhere/relay.sock";
  EXPECT_FALSE(build_plan(o, host()).value);
  o.proxy = "unix:relay.sock";
  EXPECT_FALSE(build_plan(o, host()).value);
}

TEST_F(LauncherPlan, DescribeEveryStep) {
  auto o = opts();
  o.ca = "/srv/ca/ca.crt";
  auto h = host();
  h.keytool = "/usr/bin/keytool";
  fs_.files["/etc/ssl/certs/java/cacerts"] = false;
  auto r = build_plan(o, h);
  ASSERT_TRUE(r.value);
  for (const auto& s : r.value->mounts)
    EXPECT_NE(describe(s), "?");
}

TEST_F(LauncherPlan, HomeIsAPrivateLayerByDefault) {
  auto r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  const plan& p = *r.value;
  EXPECT_EQ(p.home.mode, home_mode::layer);
  EXPECT_EQ(p.home.path, "/home/u");
  const auto layer = index_of(p, mount_kind::home_layer, "/home/u");
  ASSERT_LT(layer, p.mounts.size());
  EXPECT_EQ(p.mounts[layer].source, "/home/u");
  EXPECT_EQ(p.mounts[layer].data, "size=1073741824,nr_inodes=262144");
  // Below the work directory inside it, and below the hides of its secret files.
  EXPECT_LT(layer, index_of(p, mount_kind::bind, "/home/u/proj"));
  EXPECT_LT(layer, index_of(p, mount_kind::hide, "/home/u/.ssh"));
  EXPECT_EQ(std::count(p.env.entries.begin(), p.env.entries.end(), "HOME=/home/u"), 1);
}

// A credential store the caller creates while the jail runs (`aws configure` in another
// terminal) would show through the layer's lower directory: each built-in home path that is not
// there yet gets a mount point made in the layer and a cover, as a file or a directory.
TEST_F(LauncherPlan, HiddenHomePathsThatDoNotExistYet) {
  fs_.files["/home/u/.config"] = true;  // exists; .config/gh and .config/gcloud do not
  fs_.files["/srv/data/cfg"] = true;
  fs_.links["/home/u/.kube"] = "/srv/data/cfg";  // a link out of the home: not made there
  auto r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  const plan& p = *r.value;
  auto step = [&](const std::string& target) -> const mount_step* {
    const auto i = index_of(p, mount_kind::hide, target);
    return i < p.mounts.size() ? &p.mounts[i] : nullptr;
  };
  for (const char* dir : {"/home/u/.gnupg", "/home/u/.docker", "/home/u/.config/gh",
                          "/home/u/.config/gcloud", "/home/u/.local/share/keyrings"}) {
    const auto* s = step(dir);
    ASSERT_TRUE(s) << dir;
    EXPECT_TRUE(s->make_point) << dir;
    EXPECT_TRUE(s->is_dir) << dir;
    EXPECT_TRUE(s->optional) << dir;
    EXPECT_NE(std::find(p.hidden.begin(), p.hidden.end(), dir), p.hidden.end()) << dir;
  }
  for (const char* file : {"/home/u/.git-credentials", "/home/u/.npmrc",
                           "/home/u/.cargo/credentials", "/home/u/.cargo/credentials.toml"}) {
    const auto* s = step(file);
    ASSERT_TRUE(s) << file;
    EXPECT_TRUE(s->make_point) << file;
    EXPECT_FALSE(s->is_dir) << file;
  }
  // What exists is covered as it is, also where a link in the home leads.
  ASSERT_TRUE(step("/home/u/.ssh"));
  EXPECT_FALSE(step("/home/u/.ssh")->make_point);
  ASSERT_TRUE(step("/srv/data/cfg"));
  EXPECT_FALSE(step("/srv/data/cfg")->make_point);
  EXPECT_FALSE(step("/home/u/.kube"));
  // A link in the home leading out of it to what does not exist: nothing is made out there.
  fs_.files["/srv/data/out"] = true;
  fs_.links["/home/u/.azure"] = "/srv/data/out/azure";
  r = build_plan(opts(), host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(index_of(*r.value, mount_kind::hide, "/srv/data/out/azure"), r.value->mounts.size());
  EXPECT_NE(describe(*step("/home/u/.gnupg")).find("not there yet"), std::string::npos);

  // A path below the work directory (or any bind) would be made on the host: not made.
  fs_.files["/home/u/.local"] = true;
  auto o = opts();
  o.workdir = "/home/u/.local";
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(index_of(*r.value, mount_kind::hide, "/home/u/.local/share/keyrings"),
            r.value->mounts.size());

  // --home DIR: the caller's home is not in the jail at all; nothing is made.
  o = opts();
  o.home = "/srv/data";
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  for (const auto* s : of_kind(*r.value, mount_kind::hide))
    EXPECT_FALSE(s->make_point) << s->target;
}

TEST_F(LauncherPlan, HomeDirectoryOrScratch) {
  auto o = opts();
  o.home = "/srv/data";
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->home.mode, home_mode::dir);
  const auto at = index_of(*r.value, mount_kind::bind, "/home/u");
  ASSERT_LT(at, r.value->mounts.size());
  EXPECT_EQ(r.value->mounts[at].source, "/srv/data");
  EXPECT_TRUE(r.value->mounts[at].writable);
  EXPECT_LT(at, index_of(*r.value, mount_kind::bind, "/home/u/proj"));
  EXPECT_EQ(of_kind(*r.value, mount_kind::home_layer).size(), 0u);

  // No home on the host (nobody's /nonexistent): an empty tmpfs, and HOME says where.
  auto h = host();
  h.home = "/nonexistent";
  r = build_plan(opts(), h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->home.mode, home_mode::scratch);
  EXPECT_LT(index_of(*r.value, mount_kind::tmpfs, "/run/home"), r.value->mounts.size());
  EXPECT_EQ(std::count(r.value->env.entries.begin(), r.value->env.entries.end(), "HOME=/run/home"),
            1);
  // --env HOME=... wins.
  o = opts();
  o.env = {"HOME=/tmp"};
  r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(std::count(r.value->env.entries.begin(), r.value->env.entries.end(), "HOME=/tmp"), 1);
}

TEST_F(LauncherPlan, SizesAndFileLimits) {
  auto o = opts();
  o.tmpfs_bytes = 64ULL << 20;
  o.fsize_bytes = 1ULL << 20;
  o.nofile = 64;
  fs_.files["/var/tmp"] = true;
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->limits.fsize_bytes, 1u << 20);
  EXPECT_EQ(r.value->limits.nofile, 64u);
  for (const char* t : {"/tmp", "/var/tmp"}) {
    const auto i = index_of(*r.value, mount_kind::tmpfs, t);
    ASSERT_LT(i, r.value->mounts.size()) << t;
    EXPECT_EQ(r.value->mounts[i].data, "mode=1777,size=67108864,nr_inodes=16384") << t;
  }
  EXPECT_EQ(of_kind(*r.value, mount_kind::dev)[0]->data, "mode=1777,size=67108864,nr_inodes=16384");
  EXPECT_EQ(of_kind(*r.value, mount_kind::home_layer)[0]->data, "size=67108864,nr_inodes=16384");
  // Small sizes keep a floor of inodes; /run has its own fixed size.
  o.tmpfs_bytes = 1ULL << 20;
  r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->mounts[index_of(*r.value, mount_kind::tmpfs, "/tmp")].data,
            "mode=1777,size=1048576,nr_inodes=4096");
  EXPECT_EQ(r.value->mounts[index_of(*r.value, mount_kind::tmpfs, "/run")].data,
            "mode=0755,size=16777216,nr_inodes=4096");
}

TEST_F(LauncherPlan, CaBoundOverTheSystemBundlesAndJavaCacerts) {
  fs_.files["/etc/ssl"] = true;
  fs_.files["/etc/ssl/certs"] = true;
  fs_.files["/etc/ssl/certs/ca-certificates.crt"] = false;
  fs_.files["/etc/ssl/certs/java"] = true;
  fs_.files["/etc/ssl/certs/java/cacerts"] = false;
  fs_.links["/etc/ssl/cert.pem"] = "/etc/ssl/certs/ca-certificates.crt";
  auto o = opts();
  o.ca = "/srv/ca/ca.crt";
  auto h = host();
  h.keytool = "/usr/bin/keytool";
  auto r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  const auto files = of_kind(*r.value, mount_kind::trust_file);
  ASSERT_EQ(files.size(), 2u);  // the link to the Debian bundle counts once
  EXPECT_EQ(files[0]->target, "/etc/ssl/certs/ca-certificates.crt");
  EXPECT_EQ(files[0]->source, "ca-bundle.crt");
  EXPECT_EQ(files[1]->target, "/etc/ssl/certs/java/cacerts");
  EXPECT_EQ(files[1]->source, "truststore.jks");
  EXPECT_TRUE(r.value->trust.java);
  EXPECT_LT(index_of(*r.value, mount_kind::trust, "/run/airlock"),
            index_of(*r.value, mount_kind::trust_file, "/etc/ssl/certs/java/cacerts"));
  // No JVM flag unless asked for.
  for (const auto& e : r.value->env.entries)
    EXPECT_FALSE(e.starts_with("JAVA_TOOL_OPTIONS=")) << e;
  o.java_truststore = true;
  r = build_plan(o, h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(r.value->trust.java_tool_options);

  // Without --ca the system bundle is already the jail's: nothing to bind over it.
  r = build_plan(opts(), h);
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(of_kind(*r.value, mount_kind::trust_file).size(), 0u);
  EXPECT_FALSE(r.value->trust.java);
}

TEST_F(LauncherPlan, SelfTestNeedsNoCommand) {
  options o;
  o.self_test = true;
  auto r = build_plan(o, host());
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(r.value->self_test);
  EXPECT_FALSE(r.value->argv.empty());
}

}  // namespace
}  // namespace airlock::launcher
