#include "launcher/options.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"

#include <charconv>

namespace airlock::launcher {
namespace {

constexpr std::string_view usage_text =
    "usage: airlock run [options] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD in new user, network, mount, PID, IPC and UTS namespaces; the Airlock proxy,\n"
    "reached through a relay on 127.0.0.1:PORT inside, is its only way out.\n"
    "\n"
    "options:\n"
    "  --agent NAME         agent name the relay vouches for (with --proxy-protocol)\n"
    "  --proxy ADDR         proxy address HOST:PORT (default 127.0.0.1:3128), or\n"
    "                       unix:/PATH, the proxy's relay socket (with --proxy-protocol)\n"
    "  --proxy-protocol     send a PROXY protocol v2 header with the agent name first\n"
    "  --relay-port PORT    port of the relay inside the jail (default 3128)\n"
    "  --workdir DIR        writable work directory (default: the current directory)\n"
    "  --ro PATH            bind PATH read-only (e.g. inside a --rw directory)\n"
    "  --rw PATH            bind PATH writable\n"
    "  --hide PATH          make PATH empty and unreadable inside\n"
    "  --memory SIZE        memory limit (e.g. 512M)\n"
    "  --cpus N             CPU limit in CPUs (e.g. 1, 0.5)\n"
    "  --pids N             limit on processes of CMD's tree\n"
    "  --timeout DURATION   wall-clock limit (e.g. 60s, 5m); exit 124 when reached\n"
    "  --tmpfs-size SIZE    size of the private /tmp and of the home layer (default 1G)\n"
    "  --fsize SIZE         largest file CMD may write (RLIMIT_FSIZE)\n"
    "  --nofile N           most files CMD may have open (RLIMIT_NOFILE)\n"
    "  --home DIR           use DIR as the home, writable and kept (default: a private\n"
    "                       throwaway layer over your home; secret files stay hidden)\n"
    "  --env K=V | --env K  set K, or pass the host's K even if it looks secret\n"
    "  --ca FILE            Airlock CA certificate to trust in addition to the system's\n"
    "  --ca-key FILE        the CA key: its directory is hidden inside\n"
    "  --cgroup DIR         a delegated cgroup v2 directory to create the jail's cgroup in\n"
    "  --policy FILE        the proxy's policy: hide its secret files, and hand the agent\n"
    "                       each secret's placeholder in the secret's variable\n"
    "  --java-truststore    also make a Java trust store (needs keytool; slower start)\n"
    "  --capture            require transparent capture: a resolver inside and every TCP\n"
    "                       connection handed to the proxy (default: on where possible)\n"
    "  --no-capture         no resolver, no capture: only the proxy variables lead out\n"
    "  --dns-allow NAME     let the jail's resolver answer NAME although it looks like it\n"
    "                       carries data (long hex or base32 labels; refused by default)\n"
    "  --verbose            say which mechanisms applied (limits, mounts, relay, home)\n"
    "  --self-test          instead of CMD, try every way out of a jail built with these\n"
    "                       options; print what was refused by what; exit 1 if any got out\n"
    "  --help               this text\n"
    "\n"
    "exit status: CMD's status (128+N if killed by signal N); 124 timeout; 125 launcher\n"
    "error; 126 CMD cannot be executed; 127 CMD not found; 137 killed (memory limit).\n";

bool parse_u64(std::string_view text, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

// "1", "0.5", "2.25" -> thousandths of a CPU. At most three decimals, at most 1024 CPUs.
std::optional<std::uint32_t> parse_cpus(std::string_view text) {
  std::string_view whole = text, frac;
  if (auto dot = text.find('.'); dot != std::string_view::npos) {
    whole = text.substr(0, dot);
    frac = text.substr(dot + 1);
    if (frac.empty() || frac.size() > 3) return std::nullopt;
  }
  std::uint64_t w = 0, f = 0;
  if (whole.empty()) whole = "0";
  if (!parse_u64(whole, w) || (!frac.empty() && !parse_u64(frac, f))) return std::nullopt;
  for (std::size_t i = frac.size(); i < 3; ++i)
    f *= 10;
  if (w > 1024) return std::nullopt;
  std::uint64_t millis = w * 1000 + f;
  if (millis == 0 || millis > 1024 * 1000) return std::nullopt;
  return static_cast<std::uint32_t>(millis);
}

bool valid_env_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == '=' || c == '\0') return false;
  }
  return true;
}

// Options that take a value.
constexpr std::string_view valued[] = {
    "--agent",  "--proxy",  "--relay-port", "--workdir", "--ro",     "--rw",   "--hide",
    "--memory", "--cpus",   "--pids",       "--timeout", "--env",    "--ca",   "--ca-key",
    "--cgroup", "--policy", "--tmpfs-size", "--fsize",   "--nofile", "--home", "--dns-allow",
};

bool takes_value(std::string_view name) {
  for (auto v : valued) {
    if (v == name) return true;
  }
  return false;
}

// Applies one option; returns an error line or empty.
std::string apply(options& o, std::string_view name, std::string_view value) {
  using core::str_cat;
  if (name == "--agent") {
    if (value.empty() || value.size() > 255) return "--agent: name must be 1 to 255 bytes";
    for (char c : value) {
      // Printable ASCII without spaces: the name ends up in audit lines and metric labels.
      if (c <= ' ' || c > '~') return "--agent: name must be printable ASCII without spaces";
    }
    o.agent = std::string(value);
  } else if (name == "--proxy") {
    if (value.empty()) return "--proxy: empty address";
    o.proxy = std::string(value);
  } else if (name == "--relay-port") {
    std::uint64_t port = 0;
    if (!parse_u64(value, port) || port == 0 || port > 65535)
      return str_cat("--relay-port: not a port: '", value, "'");
    o.relay_port = static_cast<std::uint16_t>(port);
  } else if (name == "--workdir") {
    if (value.empty()) return "--workdir: empty path";
    o.workdir = std::string(value);
  } else if (name == "--ro" || name == "--rw" || name == "--hide") {
    if (value.empty()) return str_cat(name, ": empty path");
    auto& list = name == "--ro" ? o.ro : name == "--rw" ? o.rw : o.hide;
    list.emplace_back(value);
  } else if (name == "--policy") {
    if (value.empty()) return "--policy: empty path";
    o.policy = std::string(value);
  } else if (name == "--memory") {
    auto size = core::parse_size(value);
    // Below a few MiB nothing starts at all; refuse rather than fail obscurely.
    if (!size || *size < (4ULL << 20)) return str_cat("--memory: not a size >= 4M: '", value, "'");
    o.memory_bytes = *size;
  } else if (name == "--cpus") {
    auto cpus = parse_cpus(value);
    if (!cpus) return str_cat("--cpus: not a CPU count in (0, 1024]: '", value, "'");
    o.cpu_millis = *cpus;
  } else if (name == "--pids") {
    std::uint64_t n = 0;
    if (!parse_u64(value, n) || n == 0 || n > 4'194'304)
      return str_cat("--pids: not a count >= 1: '", value, "'");
    o.pids = static_cast<std::uint32_t>(n);
  } else if (name == "--timeout") {
    auto d = core::parse_duration(value);
    if (!d || d->count() <= 0) return str_cat("--timeout: not a positive duration: '", value, "'");
    o.timeout = *d;
  } else if (name == "--tmpfs-size" || name == "--fsize") {
    auto size = core::parse_size(value);
    // A /tmp below 1 MiB breaks shells' here-documents; a file limit of 0 breaks everything.
    if (!size || *size < (1ULL << 20)) return str_cat(name, ": not a size >= 1M: '", value, "'");
    (name == "--fsize" ? o.fsize_bytes : o.tmpfs_bytes) = *size;
  } else if (name == "--nofile") {
    std::uint64_t n = 0;
    // Below a few dozen descriptors the dynamic loader and most runtimes fail to start.
    if (!parse_u64(value, n) || n < 16 || n > (1ULL << 30))
      return str_cat("--nofile: not a count >= 16: '", value, "'");
    o.nofile = n;
  } else if (name == "--home") {
    if (value.empty()) return "--home: empty path";
    o.home = std::string(value);
  } else if (name == "--dns-allow") {
    std::string n(value);
    for (auto& c : n)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    while (!n.empty() && n.back() == '.')
      n.pop_back();
    if (n.empty()) return "--dns-allow: empty name";
    o.dns_allow.push_back(std::move(n));
  } else if (name == "--env") {
    auto eq = value.find('=');
    if (!valid_env_name(value.substr(0, eq)))
      return str_cat("--env: expected K=V or K, got '", value, "'");
    o.env.emplace_back(value);
  } else if (name == "--ca") {
    if (value.empty()) return "--ca: empty path";
    o.ca = std::string(value);
  } else if (name == "--ca-key") {
    if (value.empty()) return "--ca-key: empty path";
    o.ca_key = std::string(value);
  } else if (name == "--cgroup") {
    if (value.empty()) return "--cgroup: empty path";
    o.cgroup = std::string(value);
  } else {
    return str_cat("unknown option '", name, "'");
  }
  return {};
}

}  // namespace

std::string_view usage() noexcept {
  return usage_text;
}

parse_result parse_options(std::span<const std::string_view> args) {
  using core::str_cat;
  options o;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // first word of CMD
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--verbose" || arg == "-v") {
      o.verbose = true;
      continue;
    }
    if (arg == "--proxy-protocol") {
      o.proxy_protocol = true;
      continue;
    }
    if (arg == "--self-test") {
      o.self_test = true;
      continue;
    }
    if (arg == "--java-truststore") {
      o.java_truststore = true;
      continue;
    }
    if (arg == "--capture" || arg == "--no-capture") {
      o.capture = arg == "--capture" ? capture_mode::on : capture_mode::off;
      continue;
    }
    std::string_view name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos && arg.starts_with("--")) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (!takes_value(name)) return {std::nullopt, str_cat("unknown option '", name, "'")};
    if (!inline_value) {
      if (i + 1 >= args.size()) return {std::nullopt, str_cat(name, ": missing value")};
      value = args[++i];
    }
    if (auto err = apply(o, name, value); !err.empty()) return {std::nullopt, err};
  }
  for (; i < args.size(); ++i)
    o.command.emplace_back(args[i]);
  if (o.self_test && !o.command.empty())
    return {std::nullopt, "--self-test runs its own probes: give no command"};
  if (o.command.empty() && !o.help && !o.self_test)
    return {std::nullopt, "missing command (… -- CMD ARGS)"};
  if (o.command.size() == 1 && o.command[0].empty() && !o.help)
    return {std::nullopt, "empty command"};
  if (o.proxy_protocol && !o.agent) return {std::nullopt, "--proxy-protocol needs --agent NAME"};
  // The proxy's relay socket trusts the PROXY v2 header and nothing else: without it every
  // connection would be refused there, so say so now.
  if (o.proxy.starts_with("unix:") && !o.proxy_protocol)
    return {std::nullopt, "--proxy unix:PATH needs --proxy-protocol and --agent NAME"};
  return {std::move(o), {}};
}

}  // namespace airlock::launcher
