#include "policy/loader.hpp"

#include "core/str_cat.hpp"
#include "policy/compiler.hpp"
#include "policy/error_sink.hpp"
#include "policy/parser.hpp"
#include "policy/token.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace airlock::policy {
namespace {

// A policy is a few kilobytes; anything this large is a mistake (or an attack on the parser).
constexpr std::size_t max_file_bytes = 16u << 20;

std::vector<load_error> sorted(std::vector<load_error> errors) {
  // File order reads best; errors without a position (unreadable file, too many errors) last.
  std::stable_sort(errors.begin(), errors.end(), [](const load_error& a, const load_error& b) {
    const int la = a.line > 0 ? a.line : INT_MAX;
    const int lb = b.line > 0 ? b.line : INT_MAX;
    return la != lb ? la < lb : a.column < b.column;
  });
  return errors;
}

}  // namespace

load_result load_string(std::string_view yaml, const std::string& source_name,
                        const load_options& options) {
  load_result result;
  error_sink errors(source_name);
  model::policy policy;
  policy.source = source_name;
  policy.version = sha256_hex(yaml);
  mark_table marks;
  const std::string base_dir = std::filesystem::path(source_name).parent_path().string();
  parse_policy(yaml, base_dir, policy, marks, errors);
  if (!errors.full()) {
    auto snapshot = compiler::compile(std::move(policy), marks, options, errors);
    if (errors.empty()) result.policy = std::move(snapshot);
  }
  result.errors = sorted(errors.take());
  result.warnings = sorted(errors.take_warnings());
  if (!result.errors.empty()) result.policy.reset();
  return result;
}

load_result load_file(const std::string& path, const load_options& options) {
  load_result result;
  auto fail = [&](std::string message) {
    result.errors.push_back({path, 0, 0, "", std::move(message)});
    return result;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fail("is a directory, not a policy file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return fail(core::str_cat("cannot read: ", std::strerror(errno)));
  std::string text;
  char buf[65536];
  bool too_large = false;
  int read_errno = 0;
  while (true) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    text.append(buf, n);
    if (text.size() > max_file_bytes) {
      too_large = true;
      break;
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) read_errno = errno;
      break;
    }
  }
  std::fclose(f);
  if (read_errno != 0) return fail(core::str_cat("cannot read: ", std::strerror(read_errno)));
  if (too_large) return fail(core::str_cat("larger than ", max_file_bytes, " bytes"));
  return load_string(text, path, options);
}

}  // namespace airlock::policy
