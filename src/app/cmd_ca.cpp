// `airlock ca init|show`: create or describe the CA that signs interception leaves (the files
// live in certs/ by default; see certs/README.md).
#include "app/commands.hpp"

#include "core/str_cat.hpp"
#include "tls/ca.hpp"
#include "tls/openssl_util.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace airlock::app {
namespace {

constexpr std::string_view ca_usage =
    "usage: airlock ca init [--dir DIR] [--force]\n"
    "       airlock ca show [--dir DIR]\n"
    "\n"
    "  init         create a new interception CA in DIR: ca.key (mode 0600, never share it)\n"
    "               and ca.crt (give this one to the clients that should trust the proxy)\n"
    "  show         print the CA certificate's subject, validity and SHA-256 fingerprint,\n"
    "               and check that the key matches it\n"
    "\n"
    "options:\n"
    "  --dir DIR    the CA directory (default: ./certs)\n"
    "  --force      init: replace an existing CA; every client must then trust the new one\n"
    "  -h, --help   show this help\n";

void print(std::FILE* f, std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), f);
}

int usage_error(std::string_view message) {
  print(stderr, core::str_cat("airlock ca: ", message, "\n\n", ca_usage));
  return 2;
}

int fail(std::string_view message) {
  print(stderr, core::str_cat("airlock ca: ", message, "\n"));
  return 1;
}

struct ca_options {
  std::string_view action;
  std::filesystem::path dir = "certs";
  bool force = false;
  bool help = false;
};

// Returns "" on success, else the usage error.
std::string parse(args a, ca_options& out) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string_view arg = a[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;
    } else if (arg == "--force") {
      out.force = true;
    } else if (arg == "--dir") {
      if (i + 1 >= a.size() || a[i + 1].empty()) return "--dir needs a directory";
      out.dir = std::filesystem::path(a[++i]);
    } else if (arg.starts_with("--dir=")) {
      if (arg.size() == 6) return "--dir needs a directory";
      out.dir = std::filesystem::path(arg.substr(6));
    } else if (arg.starts_with("-")) {
      return core::str_cat("unknown option '", arg, "'");
    } else if (out.action.empty()) {
      out.action = arg;
    } else {
      return core::str_cat("unexpected argument '", arg, "'");
    }
  }
  if (out.help) return {};
  if (out.action.empty()) return "missing command (init or show)";
  if (out.action != "init" && out.action != "show") {
    return core::str_cat("unknown command '", out.action, "'");
  }
  if (out.force && out.action != "init") return "--force applies to init only";
  return {};
}

int init(const ca_options& o) {
  auto created = tls::create_ca(o.dir, tls::default_ca_common_name(), o.force);
  if (!created.ok) return fail(created.error);
  // Read it back through the same checks the proxy applies at startup.
  auto loaded = tls::certificate_authority::load(created.cert_path, created.key_path);
  if (!loaded.ca) return fail(core::str_cat("created, but it does not load: ", loaded.error));
  for (const auto& w : loaded.warnings)
    print(stderr, core::str_cat("warning: ", w, "\n"));
  print(stdout,
        core::str_cat("created a new CA in ", o.dir.string(), "\n", "  subject:     ",
                      loaded.ca->subject(), "\n", "  certificate: ", created.cert_path.string(),
                      "  (clients trust this file)\n", "  key:         ", created.key_path.string(),
                      "  (mode 0600; never share or commit it)\n",
                      "  valid until: ", tls::format_utc(loaded.ca->not_after()), "\n",
                      "  sha256:      ", created.fingerprint, "\n"));
  return 0;
}

int show(const ca_options& o) {
  const auto cert_path = o.dir / tls::ca_cert_file;
  const auto key_path = o.dir / tls::ca_key_file;
  tls::certificate_info info;
  std::string error;
  if (!tls::read_certificate_info(cert_path, info, error)) {
    return fail(
        core::str_cat(error, "\n(create a CA with `airlock ca init --dir ", o.dir.string(), "`)"));
  }
  const auto now = std::chrono::system_clock::now();
  const auto days_left =
      std::chrono::duration_cast<std::chrono::hours>(info.not_after - now).count() / 24;
  std::string validity = info.not_after <= now ? "EXPIRED" : core::str_cat(days_left, " days left");
  if (info.not_before > now) validity = "NOT YET VALID";
  print(stdout,
        core::str_cat(
            "certificate: ", cert_path.string(), "\n", "subject:     ", info.subject, "\n",
            "issuer:      ", info.issuer == info.subject ? "(self-signed)" : info.issuer, "\n",
            "serial:      ", info.serial, "\n", "not before:  ", tls::format_utc(info.not_before),
            "\n", "not after:   ", tls::format_utc(info.not_after), " (", validity, ")\n",
            "sha256:      ", info.fingerprint, "\n"));
  // The key: checked with the proxy's own rules when this user may read it.
  if (::access(key_path.c_str(), R_OK) != 0 && errno == EACCES) {
    print(stdout, core::str_cat("key:         ", key_path.string(),
                                " (not readable by this user; not checked)\n"));
    return 0;
  }
  auto loaded = tls::certificate_authority::load(cert_path, key_path);
  for (const auto& w : loaded.warnings)
    print(stderr, core::str_cat("warning: ", w, "\n"));
  if (!loaded.ca) {
    print(stdout, core::str_cat("status:      unusable\n"));
    return fail(loaded.error);
  }
  print(stdout,
        core::str_cat("key:         ", key_path.string(), " (matches)\n", "status:      ok\n"));
  return 0;
}

}  // namespace

int cmd_ca(args a) {
  ca_options o;
  if (std::string error = parse(a, o); !error.empty()) return usage_error(error);
  if (o.help) {
    print(stdout, ca_usage);
    return 0;
  }
  return o.action == "init" ? init(o) : show(o);
}

}  // namespace airlock::app
