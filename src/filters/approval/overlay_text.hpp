#pragma once
// One permanent approval added to the text of the overlay file (approvals.overlay), the rest of
// the file kept byte for byte. The operator narrows or withdraws an approval by editing that
// file (docs/operations.md, "Approvals"): a later approval must never undo such an edit, so the
// file is never rebuilt from what the proxy understood of it. The new rule goes at the end of
// the file's `rules` and its name at the end of the agent's `rules`, each in the style (block
// or flow) the list already has; the text is then read back, and unless it says exactly what
// the old one said plus those two entries, nothing is written.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::approval {

struct overlay_addition {
  std::string rule_name;  // approved-N
  std::string agent;      // whose `rules` list gets the name
  // The rule's keys in order, each with its value as YAML flow text ("[8080]").
  std::vector<std::pair<std::string, std::string>> fields;
};

// `old_text` with `add` in it, or "" with `error` set: the file does not parse (an edit that
// was never loaded), or its shape leaves no place to add the entries without changing what
// the rest says. An empty file gets a short header comment first.
std::string append_to_overlay(const std::string& old_text, const overlay_addition& add,
                              std::string& error);

// N of a rule named approved-N; 0 for any other name.
std::uint64_t approved_number(std::string_view name);

// The highest N of the rules named approved-N in `text` (0 when none or it does not parse), so
// a new name is not one the file already uses, loaded or not.
std::uint64_t last_approved_number(const std::string& text);

// A YAML double-quoted scalar (YAML 1.2 section 7.3.1): backslash and quote escaped, control
// bytes as \xNN, so a name from the policy cannot break out of its string.
std::string yaml_quoted(std::string_view s);

}  // namespace airlock::filters::approval
