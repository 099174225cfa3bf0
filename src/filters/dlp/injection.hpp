#pragma once
// Prompt injection in text responses (issue 16): the phrases a fetched page uses to steer an
// agent. Classes: "instruction-override" (ignore/disregard previous instructions, a new
// directive, reveal the system prompt), "authority-claim" ([SYSTEM], "you now have admin
// access"), "tool-directive" (call a tool, run this command, decode and execute, pipe to a
// shell), "exfiltration-directive" (read or send ~/.ssh, /etc/passwd), and
// "hidden-instruction" (any of these inside an HTML comment). Text is lower-cased, zero-width
// characters removed, Unicode spaces made spaces and look-alike, full-width, mathematical and
// circled letters folded first (fold_confusables); JSON's
// "\n", &nbsp;, an HTML tag or Markdown emphasis between two words counts as a space; JSON \u
// escapes and HTML character references that spell letters are read undone (escapes.hpp);
// base64 runs are decoded and read too.
//
// False positives: documentation and security writing quote these phrases. A match inside
// quotes ("...", '...', `...`, curly quotes) on its line, opened before it and closed after it,
// or right after "like", "such as", "e.g.", "for example" or "pattern", is a mention, not an
// instruction, and does not count (except inside an HTML comment, which a reader never sees).
// A quote opened in front of an instruction and never closed makes no mention of it.

#include <optional>
#include <string_view>

namespace airlock::filters::dlp {

// The class of the first injection found in `text`, or nullopt.
std::optional<std::string_view> find_injection(std::string_view text);

}  // namespace airlock::filters::dlp
