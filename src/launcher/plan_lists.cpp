// The plan's fixed lists (plan.hpp): the secrets hidden without being asked, and the system
// CA bundle paths the jail's bundle is bound over.
#include "launcher/plan.hpp"

namespace airlock::launcher {

const std::vector<std::string>& builtin_hidden_paths() {
  // Credentials that commonly sit in a home directory or /etc. Those in /etc, and those in
  // the home with --home DIR, are hidden where they exist; in the home's private layer (the
  // default) also where they do not, so that one created on the host while the jail runs
  // (`aws configure` in another terminal) is not read through the layer's lower directory.
  static const std::vector<std::string> paths = {
      "/etc/shadow",
      "/etc/shadow-",
      "/etc/gshadow",
      "/etc/gshadow-",
      "/etc/ssh",
      "/etc/sudoers",
      "/etc/sudoers.d",
      "~/.ssh",
      "~/.aws",
      "~/.azure",
      "~/.gnupg",
      "~/.netrc",
      "~/.git-credentials",
      "~/.docker",
      "~/.kube",
      "~/.config/gcloud",
      "~/.config/gh",
      "~/.npmrc",
      "~/.pypirc",
      "~/.cargo/credentials",
      "~/.cargo/credentials.toml",
      "~/.password-store",
      "~/.local/share/keyrings",
  };
  return paths;
}

bool builtin_hidden_is_file(const std::string& path) {
  for (const char* f : {"~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
                        "~/.cargo/credentials", "~/.cargo/credentials.toml"}) {
    if (path == f) return true;
  }
  return false;
}

const std::vector<std::string>& system_bundle_paths() {
  // Go's crypto/x509 list (root_linux.go), which covers the usual distributions.
  static const std::vector<std::string> paths = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Gentoo, Arch
      "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL 6
      "/etc/ssl/ca-bundle.pem",                             // openSUSE
      "/etc/pki/tls/cacert.pem",                            // OpenELEC
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // CentOS, RHEL 7
      "/etc/ssl/cert.pem",                                  // Alpine
  };
  return paths;
}

}  // namespace airlock::launcher
