#include "policy/loader.hpp"

#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "core/utf8.hpp"
#include "policy/compiler.hpp"
#include "policy/error_sink.hpp"
#include "policy/parser.hpp"
#include "policy/token.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <optional>

namespace airlock::policy {
namespace {

// A policy is a few kilobytes; anything this large is a mistake (or an attack on the parser).
constexpr std::size_t max_file_bytes = 16u << 20;

// Errors as they are shown: in file order (those without a position, such as an unreadable
// file or too many errors, last), and printable. Keys and messages quote the file's own text (a
// key, a value, a path): a newline there would forge a line in the log or in `airlock check`'s
// output, and malformed UTF-8 would make GET /policy invalid JSON.
std::vector<load_error> for_display(std::vector<load_error> errors) {
  std::stable_sort(errors.begin(), errors.end(), [](const load_error& a, const load_error& b) {
    const int la = a.line > 0 ? a.line : INT_MAX;
    const int lb = b.line > 0 ? b.line : INT_MAX;
    return la != lb ? la < lb : a.column < b.column;
  });
  for (auto& e : errors) {
    e.file = core::printable_text(e.file);
    e.key = core::printable_text(e.key);
    e.message = core::printable_text(e.message);
  }
  return errors;
}

// Reads a whole regular file of at most max_file_bytes (never blocking on a FIFO, never reading
// a device without end: core/regular_file.hpp); an error message when it cannot.
std::optional<std::string> read_text(const std::string& path, std::string& error) {
  auto read = core::read_regular_file(path, max_file_bytes);
  switch (read.problem) {
    case core::file_problem::none:
      return std::move(read.bytes);
    case core::file_problem::directory:
      error = "is a directory, not a policy file";
      break;
    case core::file_problem::not_regular:
      error = "is not a regular file (a FIFO, socket or device); a policy must be a file";
      break;
    case core::file_problem::too_large:
      error = core::str_cat("larger than ", max_file_bytes, " bytes");
      break;
    case core::file_problem::cannot_open:
    case core::file_problem::read_failed:
      error = core::str_cat("cannot read: ", read.error);
      break;
  }
  return std::nullopt;
}

// True when the text holds no YAML document at all: nothing, white space or comments only.
// That is what a file truncated before it is written again looks like, so the policy file
// itself may not be so (a policy that refuses everything is written `{}`).
bool holds_no_document(std::string_view text) {
  std::size_t i = 0;
  if (text.starts_with("\xEF\xBB\xBF")) i = 3;  // a UTF-8 byte order mark
  bool comment = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      comment = false;
    } else if (comment || c == ' ' || c == '\t') {
      continue;
    } else if (c == '#') {
      comment = true;
    } else {
      return false;
    }
  }
  return true;
}

// `include:`: each file's rules and agents' rule lists are added to `policy` (errors name the
// included file). The approvals overlay may not exist yet: the proxy writes it at the first
// permanent approval. Returns the files' bytes, for the policy's version.
std::string read_includes(model::policy& policy, mark_table& marks,
                          std::vector<load_error>& errors) {
  constexpr std::size_t max_includes = 16;
  std::string texts;
  for (std::size_t i = 0; i < policy.includes.size(); ++i) {
    const std::string file = policy.includes[i];
    const std::string key = core::str_cat("include[", i, "]");
    if (i == max_includes) {
      errors.push_back({policy.source, 0, 0, "include", "at most 16 files may be included"});
      break;
    }
    std::string why;
    std::error_code ec;
    if (file == policy.approvals.overlay && !std::filesystem::exists(file, ec)) continue;
    auto text = read_text(file, why);
    if (!text) {
      errors.push_back({file, 0, 0, key, std::move(why)});
      continue;
    }
    error_sink sink(file);
    const std::string base_dir = std::filesystem::path(file).parent_path().string();
    marks.enter_file(file);
    parse_included(*text, base_dir, key, policy, marks, sink);
    marks.leave_file();
    for (auto& e : sink.take())
      errors.push_back(std::move(e));
    texts += core::str_cat("\n# include ", file, "\n", *text);
  }
  return texts;
}

}  // namespace

load_result load_string(std::string_view yaml, const std::string& source_name,
                        const load_options& options) {
  load_result result;
  error_sink errors(source_name);
  model::policy policy;
  policy.source = source_name;
  mark_table marks;
  const std::string base_dir = std::filesystem::path(source_name).parent_path().string();
  parse_policy(yaml, base_dir, policy, marks, errors);
  std::vector<load_error> included_errors;
  // The version covers the included files too: an approval written there is a new policy.
  const std::string included = read_includes(policy, marks, included_errors);
  policy.version = sha256_hex(included.empty() ? yaml : core::str_cat(yaml, included));
  if (!errors.full()) {
    auto snapshot = compiler::compile(std::move(policy), marks, options, errors);
    if (errors.empty() && included_errors.empty()) result.policy = std::move(snapshot);
  }
  result.errors = errors.take();
  for (auto& e : included_errors)
    result.errors.push_back(std::move(e));
  result.errors = for_display(std::move(result.errors));
  result.warnings = for_display(errors.take_warnings());
  if (!result.errors.empty()) result.policy.reset();
  return result;
}

load_result load_file(const std::string& path, const load_options& options) {
  std::string why;
  auto text = read_text(path, why);
  if (text && holds_no_document(*text))
    why =
        "is empty (or only comments): not loaded, as a file caught between its truncation and "
        "its new content looks like that (a policy that refuses everything is written {})";
  if (!text || !why.empty()) {
    load_result result;
    result.errors = for_display({{path, 0, 0, "", std::move(why)}});
    return result;
  }
  return load_string(*text, path, options);
}

}  // namespace airlock::policy
