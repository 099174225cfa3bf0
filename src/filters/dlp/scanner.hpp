#pragma once
// What outbound DLP looks for and where (issue 16). A scanner is built once per policy snapshot
// for one set of classes; it reads a piece of a request (a URL part, a header value, a body
// window) and names the classes found there, never the value.
//
// Each text is read as sent and through the encodings agents and attackers use: percent-encoding
// (repeated; three or more layers are a finding of their own, "nested-encoding"), base64 and
// base64url, base32 and hex (also "41-4b-49", "41 4b 49" and xxd's "414b 4941"), base64 wrapped
// in lines, gzip inside any of these, JSON string escapes ("\u0041"), with zero-width
// characters removed and confusable letters folded. Decoded text is read again, two levels deep.
// The classes are the redactor library's (redaction/builtin.hpp) and the policy's custom redactors,
// the policy's own secrets ("secret:<name>"), "seed-phrase" (BIP-39 with its checksum) and, when
// asked, "high-entropy" tokens.
//
// @par Thread Safety
// Immutable after build(); shared by every exchange.

#include "filters/redaction/engine.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::dlp {

inline constexpr std::string_view kSeedPhrase = "seed-phrase";
inline constexpr std::string_view kHighEntropy = "high-entropy";
inline constexpr std::string_view kNestedEncoding = "nested-encoding";

// One finding: the class and where. Both point at storage that outlives the exchange (the
// scanner's engine, or constants).
struct finding {
  std::string_view cls;
  std::string_view location;
  bool operator==(const finding&) const = default;
};
using findings = std::vector<finding>;

struct scanner_config {
  std::vector<std::string> classes;  // empty: the default set (default_classes())
  bool entropy = false;
  std::vector<redaction::redactor_spec> custom;    // the policy's `redactors:`
  std::vector<redaction::literal_secret> secrets;  // the policy's secrets
  std::vector<std::string> placeholders;           // their placeholders: never findings
};

class scanner {
 public:
  struct build_result {
    std::shared_ptr<const scanner> built;  // null when errors is not empty
    std::vector<std::string> errors;
  };
  static build_result build(const scanner_config& config);

  // Every built-in class but email and phone (too common in ordinary requests), and
  // seed-phrase.
  static std::vector<std::string> default_classes();

  // How a text is read.
  enum class kind {
    url,     // a path or a query: percent-decoded, '+' a space in a query
    header,  // a header value (a cookie value is percent-decoded as well)
    body,    // a body window
  };
  // Adds what `text` holds, under `location`, to `out` (each class once per location).
  void scan(std::string_view text, kind how, std::string_view location, findings& out) const;
  struct piece {
    std::string_view text;
    kind how;
    std::string_view location;
  };
  // The same as scan() on each piece, for less: the engine takes one first look at the pieces
  // joined (most requests hold no class at all) instead of one per piece, then reads each
  // piece as scan() does, without its own first look when the joined one found nothing.
  void scan_all(const std::vector<piece>& pieces, findings& out) const;
  // The query's values joined: a secret split across parameters ("a=AKIA&b=IOSF...").
  void scan_query(std::string_view query, findings& out) const;

  const redaction::engine& engine() const noexcept { return *engine_; }

 private:
  void scan(std::string_view text, kind how, std::string_view location, findings& out,
            bool engine_quiet) const;
  // One scan()'s state: where its findings go, and how many bytes gzip may still inflate to
  // (kInflateBudget a call: a body of many small gzip tokens must not make the worker inflate
  // and read megabytes).
  struct reading {
    std::string_view location;
    findings& out;
    std::size_t inflate_left;
  };
  // engine_quiet: the engine is known to find nothing in `text` itself (not in what decodes
  // from it).
  void read(std::string_view text, int depth, reading& r, bool engine_quiet = false) const;
  // Each token decoded, and each run of tokens that decodes only joined (hex pairs with
  // spaces, base64 wrapped in lines: token_runs.hpp).
  void read_tokens(std::string_view text, int depth, reading& r) const;
  // What a token or run decoded to, read one level deeper: whole when it is text, else its
  // printable stretches; gzip inflated first (when `inflate`, within the budget).
  void read_decoded(std::string_view decoded, int depth, reading& r, bool inflate = true) const;
  bool entropic(std::string_view token) const;

  std::shared_ptr<const redaction::engine> engine_;
  bool seed_ = false;
  bool entropy_ = false;
  std::vector<std::string> placeholders_;
};

void add_finding(findings& out, std::string_view cls, std::string_view location);

}  // namespace airlock::filters::dlp
