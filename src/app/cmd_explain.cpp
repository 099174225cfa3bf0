// `airlock explain --config FILE [--agent NAME] [--upgrade PROTO] [--binary PATH] METHOD URL`:
// which rule decides a request, and why.
#include "app/commands.hpp"

#include "core/str_cat.hpp"

#include "filters/dlp/dlp_filter.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/mcp/explain.hpp"
#include "filters/redaction/policy_redactors.hpp"
#include "policy/explain.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::app {
namespace {

constexpr const char* usage =
    "usage: airlock explain --config FILE [--agent NAME] [--upgrade PROTO]\n"
    "                       [--binary PATH [--sha256 HEX]] [--body FILE] METHOD URL\n"
    "\n"
    "Shows how the policy decides one request, rule by rule. URL is\n"
    "  http://host[:port]/path    a plain HTTP request\n"
    "  https://host[:port]/path   CONNECT host:port, then (if the rule inspects) the request\n"
    "  host:port                  with METHOD CONNECT\n"
    "The agent defaults to 'default'. No DNS lookup is made. --binary: the program\n"
    "making the request inside an `airlock run` jail (rules' binaries); without it,\n"
    "the request has no program, as a direct client of the proxy.\n"
    "--body: the request's body (- for standard input): what outbound DLP finds in\n"
    "it and what its action does; under a rule with `mcp`, each JSON-RPC message is\n"
    "decided: method, tool, argument rules, DLP.\n"
    "Exit status: 0 allowed, 1 denied, 2 usage or policy error.\n";

// The rule's `mcp` section applied to the body (filters/mcp/explain.hpp). DLP reads the
// arguments with the rule's classes (or the policy-wide ones, else the default set) and the
// custom redactors; the policy's secrets are not read by `explain`, so `secret:NAME` is not
// looked for.
filters::mcp::body_explanation explain_mcp_body(const policy::snapshot& s,
                                                const policy::compiled_rule& rule,
                                                std::string_view body) {
  const policy::model::dlp_config* cfg = nullptr;
  if (rule.source != nullptr && rule.source->dlp.present)
    cfg = &rule.source->dlp;
  else if (s.model().dlp.present)
    cfg = &s.model().dlp;
  if (cfg != nullptr && cfg->off) cfg = nullptr;
  std::shared_ptr<const filters::dlp::scanner> scan;
  if (rule.mcp.scan_arguments) {
    filters::dlp::scanner_config config;
    if (cfg != nullptr) {
      config.classes = cfg->classes;
      config.entropy = cfg->entropy;
    }
    config.custom = filters::redaction::custom_redactors(s);
    scan = filters::dlp::scanner::build(config).built;
  }
  const bool block = cfg == nullptr || cfg->action == policy::model::dlp_action::block;
  return filters::mcp::explain_body(rule.mcp, scan.get(), block, body);
}

// Outbound DLP on the body (filters/dlp), under the rule's effective `dlp` (its own, else the
// policy-wide one): the classes found and what the action does with them. As the filter reads
// a body held whole; the policy's secrets are not read by `explain`, so `secret:NAME` is not
// looked for. False when the body would be refused.
bool explain_dlp_body(const policy::snapshot& s, const policy::compiled_rule& rule,
                      std::string_view body, std::string& out) {
  using policy::model::dlp_action;
  auto built = filters::dlp::dlp_plan::build(s);
  const filters::dlp::dlp_plan::rule_plan* rp = built.plan && rule.index < built.plan->rules.size()
                                                    ? &built.plan->rules[rule.index]
                                                    : nullptr;
  if (rp == nullptr || rp->config == nullptr || !rp->scan) {
    out += "dlp: off under this rule\n";
    return true;
  }
  filters::dlp::findings found;
  rp->scan->scan(body, filters::dlp::scanner::kind::body, "body", found);
  if (found.empty()) {
    out += core::str_cat("dlp (rule ", rule.name, "): nothing found in the body\n");
    return true;
  }
  for (const auto& f : found)
    out += core::str_cat("dlp (rule ", rule.name, "): ", f.cls, " in the body\n");
  switch (rp->config->action) {
    case dlp_action::report:
      out += "dlp: action report: the request goes on, the findings are recorded\n";
      return true;
    case dlp_action::redact: {
      // As the filter does: replaced where the classes match; what is still found is blocked.
      filters::dlp::findings left;
      rp->scan->scan(rp->scan->engine().redact(body), filters::dlp::scanner::kind::body, "body",
                     left);
      if (left.empty()) {
        out +=
            "dlp: action redact: the body goes on with each finding replaced by "
            "[REDACTED:class] (when it is held whole: Content-Length up to max_body_bytes)\n";
        return true;
      }
      out +=
          "dlp: action redact: a finding cannot be replaced in place (it is only visible "
          "decoded): refused, 403 dlp_blocked\n";
      return false;
    }
    case dlp_action::block:
      break;
  }
  out += "dlp: action block: refused, 403 dlp_blocked\n";
  return false;
}

int usage_error(std::string_view message) {
  std::fprintf(stderr, "airlock explain: %.*s\n\n%s", static_cast<int>(message.size()),
               message.data(), usage);
  return 2;
}

}  // namespace

int cmd_explain(args a) {
  std::string config;
  std::string agent = "default";
  std::string upgrade;
  std::optional<net::peer_binary> binary;
  std::string sha256;
  std::optional<std::string> body_file;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string_view arg = a[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= a.size()) return false;
      out = a[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "--config" || arg == "-c") {
      if (!value(config)) return usage_error("--config needs a FILE");
    } else if (arg == "--agent") {
      if (!value(agent)) return usage_error("--agent needs a NAME");
    } else if (arg == "--upgrade") {
      if (!value(upgrade)) return usage_error("--upgrade needs a protocol");
    } else if (arg == "--binary") {
      binary.emplace();
      if (!value(binary->path)) return usage_error("--binary needs a PATH");
    } else if (arg == "--body") {
      if (!value(body_file.emplace())) return usage_error("--body needs a FILE (or -)");
    } else if (arg == "--sha256") {
      if (!value(sha256)) return usage_error("--sha256 needs 64 hex digits");
    } else if (arg.starts_with("--config=")) {
      config = arg.substr(9);
    } else if (arg.starts_with("--agent=")) {
      agent = arg.substr(8);
    } else if (arg.starts_with("--upgrade=")) {
      upgrade = arg.substr(10);
    } else if (arg.starts_with("-") && arg.size() > 1) {
      return usage_error(std::string("unknown option ") + std::string(arg));
    } else {
      positional.emplace_back(arg);
    }
  }
  if (config.empty()) return usage_error("--config FILE is required");
  if (positional.size() != 2) return usage_error("expected METHOD and URL");
  // Methods are case-sensitive on the wire; on the command line "get" surely means GET.
  std::string method = positional[0];
  for (char& c : method)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (char& c : upgrade)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');

  const auto loaded = policy::load_file(config);
  for (const auto& w : loaded.warnings)
    std::fprintf(stderr, "warning: %s\n", w.to_string().c_str());
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::fprintf(stderr, "%s\n", e.to_string().c_str());
    return 2;
  }
  policy::explain_request request;
  request.agent = agent;
  request.method = method;
  request.url = positional[1];
  request.upgrade = upgrade;
  if (!sha256.empty() && !binary) return usage_error("--sha256 goes with --binary");
  if (binary) {
    for (char& c : sha256)
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    binary->sha256 = sha256;
    request.binary = &*binary;
  }
  const auto result = policy::explain(*loaded.policy, request);
  if (result.input_error) {
    std::fprintf(stderr, "airlock explain: %s", result.text.c_str());
    return 2;
  }
  std::fputs(result.text.c_str(), stdout);
  if (!body_file) return result.allowed ? 0 : 1;
  std::string body;
  if (*body_file == "-") {
    body.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream in(*body_file, std::ios::binary);
    if (!in) return usage_error("cannot read --body " + *body_file);
    body.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (!result.allowed) {
    std::fputs("body: not read (the request is denied)\n", stdout);
    return 1;
  }
  if (result.rule == nullptr) {
    std::fputs("body: not read (no rule)\n", stdout);
    return 0;
  }
  std::string dlp_text;
  const bool dlp_passes = explain_dlp_body(*loaded.policy, *result.rule, body, dlp_text);
  std::fputs(dlp_text.c_str(), stdout);
  if (!result.rule->mcp.active) return dlp_passes ? 0 : 1;
  const auto mcp = explain_mcp_body(*loaded.policy, *result.rule, body);
  std::fputs(core::str_cat("mcp (rule ", result.rule->name, "):\n").c_str(), stdout);
  std::fputs(mcp.text.c_str(), stdout);
  return mcp.allowed && dlp_passes ? 0 : 1;
}

}  // namespace airlock::app
