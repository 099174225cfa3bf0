#include "filters/redaction/builtin.hpp"

#include "core/str_cat.hpp"
#include "filters/redaction/validators.hpp"

#include <algorithm>
#include <array>

namespace airlock::filters::redaction {
namespace {

namespace v = validators;

struct builtin {
  std::string_view name;
  std::string_view pattern;
  validator_fn validator;
  std::size_t max_length;  // 0: unbounded repetition, matched within the overlap window
  // The prefilter hint (see redactor.hpp): literals, each starting at most max_before bytes
  // into the match, or the digit-run conditions.
  std::array<std::string_view, 12> literals{};
  bool icase = false;
  std::size_t max_before = 0;
  bool card_digits = false;
  bool phone_digits = false;
  bool caps_digits = false;
  std::size_t base58_min = 0;
  std::size_t base58_max = 0;
};

// See builtin.hpp for what each one catches. max_length is a bound on the pattern's language
// and the hints hold for every match, both checked by hand against each pattern (and by the
// tests, which compare with an engine that runs RE2 over every byte).
constexpr std::array<builtin, 22> kBuiltins{{
    {"aws-access-key",
     R"re((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})re",
     v::alnum_bounded,
     20,
     {"AKIA", "ASIA", "ABIA", "ACCA"}},
    {"aws-secret-key",
     R"re((?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)\\?["']?\s{0,5}[:=]\s{0,5}\\?["']?((?:[A-Za-z0-9+]|\\?/){40}))re",
     v::aws_secret_key,
     128,
     {"secret"},
     true,
     4},
    {"gcp-api-key", R"re(AIza[0-9A-Za-z_-]{35})re", v::gcp_api_key, 39, {"AIza"}},
    {"gcp-service-account",
     R"re(\\?"private_key_id\\?"\s{0,5}:\s{0,5}\\?"([0-9a-f]{40})\\?")re",
     nullptr,
     96,
     {"private_key_id"},
     false,
     2},
    {"github-token",
     R"re(gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})re",
     v::alnum_bounded,
     266,
     {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
    {"gitlab-token",
     R"re(gl(?:pat|dt|rt|ptt|ft|imt|soat|oas|cbt|agent|wt|ffct)-[A-Za-z0-9_.-]{20,255})re",
     v::alnum_bounded_trim,
     264,
     {"glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glsoat-", "gloas-", "glcbt-",
      "glagent-", "glwt-", "glffct-"}},
    {"slack-token",
     R"re(xox[abposre]-[A-Za-z0-9-]{10,250})re",
     v::alnum_bounded_trim,
     255,
     {"xox"}},
    {"slack-webhook",
     R"re(https?:(?:\\?/){2}hooks\.slack(?:-gov)?\.com\\?/(?:services|workflows|triggers)(?:\\?/[A-Za-z0-9_-]{1,64}){1,8})re",
     nullptr,
     640,
     {"hooks.slack"},
     false,
     10},
    {"jwt", R"re(eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*)re", v::jwt, 0, {"eyJ"}},
    // Preferred: BEGIN through END (lazy body, any PEM header line). Fallback when no END is
    // in reach: the base64 body only, so a truncated key is still cut out.
    {"pem-private-key",
     R"re(-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:(?:[A-Za-z0-9+/=:,. \t\r\n_-]|(?:\\){1,3}[rnt/])*?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=\r\n]|(?:\\){1,3}[rn/])*))re",
     nullptr,
     0,
     {"-----BEGIN "}},
    // Local part of at most 64 bytes (RFC 5321 section 4.5.3.1.1), labels of at most 63.
    {"email",
     R"re([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24})re",
     v::email,
     672,
     {"@"},
     false,
     64},
    {"payment-card",
     R"re([2-6][0-9](?:[ -]?[0-9]){11,17})re",
     v::payment_card,
     37,
     {},
     false,
     0,
     true},
    {"phone",
     R"re(\+[1-9](?:[ .-]?[0-9]){7,14}|(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4})re",
     v::phone,
     32,
     {"+"},
     false,
     0,
     false,
     true},
    // The classes outbound DLP added (issue 16). Vendor prefixes from each vendor's key format.
    {"stripe-key",
     R"re((?:sk|rk)_(?:live|test)_[A-Za-z0-9_]{16,247})re",
     v::alnum_bounded,
     255,
     {"sk_live_", "sk_test_", "rk_live_", "rk_test_"}},
    {"anthropic-key",
     R"re(sk-ant-[a-z]{3,5}[0-9]{2}-[A-Za-z0-9_-]{20,200})re",
     v::alnum_bounded_trim,
     215,
     {"sk-ant-"}},
    {"openai-key",
     R"re(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,250}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})re",
     v::alnum_bounded_trim,
     262,
     {"sk-proj-", "sk-svcacct-", "sk-admin-", "T3BlbkFJ"},
     false,
     23},
    {"sendgrid-key",
     R"re(SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64})re",
     v::alnum_bounded_trim,
     100,
     {"SG."}},
    {"azure-connection-string",
     R"re((?i:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20,200}={0,2})re",
     nullptr,
     218,
     {"accountkey", "sharedaccesskey"},
     true},
    {"database-url",
     R"re((?i:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver)://[^\s:/@"'<>]{1,64}:[^\s/@"'<>]{1,128}@[A-Za-z0-9.-]{1,253})re",
     nullptr,
     463,
     // How each scheme ends ("postgresql" -> "sql://"), so that http and https URLs are not
     // searched at all: "://" alone sent every URL in a response through RE2.
     {"res://", "sql://", "db://", "srv://", "is://", "iss://", "qp://", "qps://", "ver://"},
     true,
     8},
    // No literal every match holds: an IBAN starts with two capitals and two digits; a legacy
    // address (26-35 bytes) and a WIF key (51-52) are whole tokens of base58 (their validators
    // ask for token boundaries); a segwit address starts with its human-readable part.
    {"iban",
     R"re([A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?)re",
     v::iban,
     43,
     {},
     false,
     0,
     false,
     false,
     true},
    {"bitcoin-address",
     R"re((?:bc1|tb1)[02-9ac-hj-np-z]{11,71}|[13][1-9A-HJ-NP-Za-km-z]{25,34})re",
     v::bitcoin_address,
     74,
     {"bc1", "tb1"},
     false,
     0,
     false,
     false,
     false,
     26,
     35},
    {"wif-key",
     R"re(5[HJK][1-9A-HJ-NP-Za-km-z]{49}|[KL][1-9A-HJ-NP-Za-km-z]{51})re",
     v::wif_key,
     52,
     {},
     false,
     0,
     false,
     false,
     false,
     51,
     52},
}};

constexpr auto kNames = [] {
  std::array<std::string_view, kBuiltins.size()> names{};
  for (std::size_t i = 0; i < kBuiltins.size(); ++i)
    names[i] = kBuiltins[i].name;
  return names;
}();

redactor_spec to_spec(const builtin& b) {
  redactor_spec spec{
      std::string(b.name), std::string(b.pattern), core::str_cat("[REDACTED:", b.name, "]"),
      b.validator,         b.max_length,           {}};
  for (std::string_view lit : b.literals)
    if (!lit.empty()) spec.hint.literals.push_back({std::string(lit), b.icase, b.max_before});
  spec.hint.card_digits = b.card_digits;
  spec.hint.phone_digits = b.phone_digits;
  spec.hint.caps_digits = b.caps_digits;
  spec.hint.base58_min = b.base58_min;
  spec.hint.base58_max = b.base58_max;
  return spec;
}

const builtin* find(std::string_view name) {
  for (const auto& b : kBuiltins)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace

std::span<const std::string_view> builtin_names() noexcept {
  return kNames;
}

std::optional<std::vector<redactor_spec>> builtin_redactor(std::string_view name) {
  const builtin* b = find(name);
  if (b == nullptr) return std::nullopt;
  std::vector<redactor_spec> specs{to_spec(*b)};
  // A service-account key file carries the key itself as "private_key": a PEM block.
  if (name == "gcp-service-account") specs.push_back(to_spec(*find("pem-private-key")));
  return specs;
}

std::vector<redactor_spec> all_builtin_redactors() {
  std::vector<redactor_spec> specs;
  for (const auto& b : kBuiltins)
    specs.push_back(to_spec(b));
  return specs;
}

resolved_redactors resolve_redactors(std::span<const std::string> names,
                                     std::span<const redactor_spec> custom) {
  resolved_redactors out;
  auto add = [&](redactor_spec spec) {
    const bool seen = std::any_of(out.specs.begin(), out.specs.end(),
                                  [&](const redactor_spec& s) { return s.name == spec.name; });
    if (!seen) out.specs.push_back(std::move(spec));
  };
  for (const std::string& name : names) {
    auto it = std::find_if(custom.begin(), custom.end(),
                           [&](const redactor_spec& s) { return s.name == name; });
    if (it != custom.end()) {
      add(*it);
    } else if (auto specs = builtin_redactor(name)) {
      for (auto& s : *specs)
        add(std::move(s));
    } else {
      out.errors.push_back(core::str_cat("unknown redactor '", name, "'"));
    }
  }
  return out;
}

}  // namespace airlock::filters::redaction
