#pragma once
// Private to the policy component: `secrets` and `redactors` of the model -> their compiled
// forms. Reads every secret's value (secret_reader.hpp), checks placeholders and host bindings,
// and checks every custom redactor the way the redaction engine will compile it. Errors and
// warnings go to the sink under the offending key; no message quotes a secret value or a
// placeholder (someone may have pasted the real value there).

#include "policy/error_sink.hpp"
#include "policy/model.hpp"
#include "policy/secrets.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

// Secret names go into templates (${secrets.NAME}), replacements ([REDACTED:secret:NAME]),
// audit records and metric labels: letters, digits, '_' and '-', at most 64.
inline constexpr std::size_t max_secret_name = 64;
// Redactor names: letters, digits, '_', '.', '-', at most 128 (the engine's rule).
inline constexpr std::size_t max_redactor_name = 128;
inline constexpr std::size_t max_replacement = 256;

// Normalises the hosts written back into `policy.secrets`. With read_values false, no value is
// read (see load_options::read_secrets) and the checks that need one are skipped.
std::vector<compiled_secret> compile_secrets(model::policy& policy, const mark_table& marks,
                                             error_sink& errors, bool read_values = true);

std::vector<compiled_redactor> compile_redactors(const model::policy& policy,
                                                 const mark_table& marks, error_sink& errors);

// The "prefix" of a secret value that a placeholder must keep: the leading words of 1..6
// lower-case letters or digits, each followed by '_' or '-' ("ghp_", "github_pat_",
// "sk-ant-api03-", "xoxb-"), at most half of the value. 0 when there is none ("AKIA...").
std::size_t secret_prefix_length(std::string_view value) noexcept;

// Why `placeholder` cannot stand for `value` ("" when it can): it must be printable ASCII
// without spaces, as long as the value, different from it, start with the value's prefix, and
// not give the value away (past the prefix, at most max(6, a quarter) of its characters may
// equal the value's at the same position). The message never quotes either.
std::string placeholder_problem(std::string_view placeholder, std::string_view value);
// The part of those checks that needs no value (printable ASCII without spaces).
std::string placeholder_text_problem(std::string_view placeholder);

}  // namespace airlock::policy
