#include "launcher/host.hpp"

#include "launcher/step.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

extern char** environ;

namespace airlock::launcher {

bool real_host_facts(host_facts& out) {
  out.uid = ::getuid();
  out.gid = ::getgid();
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return step_failed("getcwd");
  out.cwd = buf;
  if (const passwd* pw = ::getpwuid(out.uid); pw && pw->pw_dir) out.passwd_home = pw->pw_dir;
  if (const char* home = std::getenv("HOME"); home && *home) {
    out.home = home;
  } else {
    out.home = out.passwd_home;
  }
  for (char** e = environ; e && *e; ++e)
    out.environ.emplace_back(*e);
  out.canonical = [](const std::string& path) -> std::optional<std::string> {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
    return std::string(resolved);
  };
  out.is_dir = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      if (!dir.empty()) {
        std::string candidate = dir + "/keytool";
        if (::access(candidate.c_str(), X_OK) == 0) {
          out.keytool = candidate;
          break;
        }
      }
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return true;
}

}  // namespace airlock::launcher
