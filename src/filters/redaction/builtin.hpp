#pragma once
// The library of ready redactors a policy can name in `redact: [...]`. Each replaces its match
// with "[REDACTED:<name>]". What each one catches (and, as important, leaves alone):
//
//   aws-access-key   AKIA/ASIA/ABIA/ACCA + 16 [A-Z0-9], not glued to other letters or digits.
//   aws-secret-key   40 base64 bytes (a JSON-escaped "\/" counts as '/') right after a label:
//                    aws_secret_access_key, aws_secret_key, secret_access_key, SecretAccessKey
//                    (any case, '_' optional) then optional quote, ':' or '=', optional quote.
//                    Only the value is replaced. A bare 40-byte string is left alone.
//   gcp-api-key      AIza + 35 [0-9A-Za-z_-].
//   gcp-service-account  the "private_key_id" value (40 hex) of a service-account JSON key;
//                    naming it also enables pem-private-key, which covers "private_key".
//   github-token     ghp_/gho_/ghu_/ghs_/ghr_ + 36..251 [A-Za-z0-9]; github_pat_ + 22..255.
//   gitlab-token     glpat-, gldt-, glrt-, glptt-, glft-, glimt-, glsoat-, gloas-, glcbt-,
//                    glagent-, glwt-, glffct- + 20..255 [A-Za-z0-9_.-] (a final '.' is kept).
//   slack-token      xoxa-/xoxb-/xoxp-/xoxo-/xoxs-/xoxr-/xoxe- + 10..250 [A-Za-z0-9-].
//   slack-webhook    https://hooks.slack.com/{services,workflows,triggers}/... (also
//                    hooks.slack-gov.com, and with JSON-escaped "\/").
//   jwt              eyJ<header>.<payload>.<signature> in base64url whose header decodes to
//                    JSON with "alg" (the signature may be empty: alg "none").
//   pem-private-key  -----BEGIN [X ]PRIVATE KEY----- through the matching END line, also with
//                    JSON-escaped "\n" and "\/"; a block without an END within the overlap is
//                    redacted up to the end of its base64 body. Public keys and certificates
//                    are left alone.
//   email            local@domain.tld: local part of 1..64 of [A-Za-z0-9._%+-] (a longer one
//                    loses only its last 64 bytes), up to 10 labels, TLD of 2..24 letters. A
//                    JSON escape glued in front ("\nbob@x.io") is kept. "name@2x.png"-style file
//                    names are left alone.
//   payment-card     13..19 digits, optionally in groups separated by one ' ' or '-' (first
//                    group of 4), with a scheme prefix and length (Visa, Mastercard, Amex,
//                    Discover, UnionPay, Diners, JCB, Mir, Maestro) and a valid Luhn checksum,
//                    not glued to letters, digits, '.', '+', '_' or '-'. Random digit runs,
//                    millisecond timestamps (they start with 1), UUIDs, decimals and negative
//                    numbers are left alone.
//   phone            (a) '+', a country code digit 1-9, then 7..14 more digits, optionally
//                    separated by single ' ', '.' or '-' (groups after the country code of two
//                    digits or more): +14155550132, +44 20 7946 0958, +1-415-555-0132;
//                    (b) North American numbers with separators: an optional "1 "/"+1-" prefix,
//                    area code [2-9]XX as "(415) ", "(415)" or "415-"/"415."/"415 ", exchange
//                    [2-9]XX, separator, 4 digits: (415) 555-0132, 415-555-0132, 415.555.0132.
//                    Never a bare digit run (4155550132 is left alone), never '.' mixed with
//                    other separators, never glued to letters, digits or '_', never preceded
//                    by '+', '.', '-', '/' (IP addresses, versions, dates, longer numbers).
//
// Patterns are written for RE2's DFA (no back-references). Each carries a prefilter hint
// (redactor.hpp): the literal or digit shape every match contains, so that RE2 runs only near
// those (prefilter.hpp); the tests check the hints against RE2 over every byte.

#include "filters/redaction/redactor.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction {

// Every built-in name, in the order the full library is built.
std::span<const std::string_view> builtin_names() noexcept;

// The spec(s) one name stands for (gcp-service-account brings pem-private-key along), or
// nullopt for a name that is not built in.
std::optional<std::vector<redactor_spec>> builtin_redactor(std::string_view name);

// The whole library (what the benchmark runs).
std::vector<redactor_spec> all_builtin_redactors();

// Turns the names a policy rule lists into specs: a custom redactor of that name first, else a
// built-in. Names are deduplicated; an unknown name is an error that names it.
struct resolved_redactors {
  std::vector<redactor_spec> specs;
  std::vector<std::string> errors;
};
resolved_redactors resolve_redactors(std::span<const std::string> names,
                                     std::span<const redactor_spec> custom);

}  // namespace airlock::filters::redaction
