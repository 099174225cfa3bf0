#include "filters/credentials/credential_filters.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "filters/credentials/injection.hpp"
#include "filters/credentials/placeholder_scanner.hpp"
#include "filters/credentials/placeholders.hpp"
#include "filters/credentials/placement.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <optional>

namespace airlock::filters::credentials {
namespace {

bool contains(const std::vector<std::size_t>& v, std::size_t i) {
  return std::find(v.begin(), v.end(), i) != v.end();
}

// The scheme and authority of an absolute-form target ("http://host:port"); empty for the
// origin-form target of a request in a tunnel (its authority is the Host field).
std::string_view authority_of(std::string_view target) {
  if (target.starts_with('/')) return {};
  const std::size_t scheme = target.find("://");
  const std::size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
  return target.substr(0, target.find_first_of("/?", from));
}

class placeholder_guard final : public filter {
 public:
  explicit placeholder_guard(std::span<const policy::compiled_secret> secrets)
      : secrets_(secrets) {}

  verdict on_request_head(exchange& ex) override {
    ex.placeholders = find_placeholders(
        secrets_, *ex.request, ex.request->target(),
        ex.connect ? std::string_view() : std::string_view(ex.request->method_string()));
    for (std::size_t i : ex.placeholders)
      if (!secrets_[i].bound_to(ex.target.host)) return refuse(ex, i);
    // On a bound host, only where each secret's swap_in swaps it. (A CONNECT head is never
    // forwarded nor swapped: nothing there becomes a value.)
    if (!ex.connect) {
      const std::string_view target = ex.request->target();
      if (auto m = find_misplaced(secrets_, ex.placeholders, *ex.request, authority_of(target),
                                  ex.path_and_query, ex.request->method_string()))
        return refuse_misplaced(ex, *m);
    }
    if (ex.has_body && !ex.connect) {
      scan_.emplace(secrets_, ex.target.host);
      if (!scan_->active()) scan_.reset();
    }
    return verdict::next();
  }

  body_use request_body_use(const exchange&) const override {
    return scan_ ? body_use::observe : body_use::none;
  }

  verdict on_request_body(exchange& ex, std::string_view piece, bool) override {
    const std::size_t hit = scan_->scan(piece);
    return hit == placeholder_scanner::none ? verdict::next() : refuse(ex, hit);
  }

  // Request trailers are checked as the head is: a placeholder for a host its secret is not
  // bound to is refused, in a name or a value. (They are never swapped for values: the
  // injection filter edits the head only, docs/policy.md.)
  verdict on_trailers(exchange& ex, boost::beast::http::fields& fields, bool response) override {
    if (response) return verdict::next();
    for (const auto& f : fields) {
      for (const auto text : {f.name_string(), f.value()}) {
        placeholder_scanner scan(secrets_, ex.target.host);  // one per text: no carry between
        if (!scan.active()) return verdict::next();
        const std::size_t hit = scan.scan(text);
        if (hit != placeholder_scanner::none) return refuse(ex, hit);
      }
    }
    return verdict::next();
  }

  // A WebSocket message from the agent is a body like any other: a placeholder for a host its
  // secret is not bound to is refused. Each message is whole, so a fresh scanner reads it.
  verdict on_message(exchange& ex, const message& m) override {
    if (m.from != message_from::client) return verdict::next();
    placeholder_scanner scan(secrets_, ex.target.host);
    if (!scan.active()) return verdict::next();
    const std::size_t hit = scan.scan(m.payload);
    return hit == placeholder_scanner::none ? verdict::next() : refuse(ex, hit);
  }

 private:
  // Logged as the exfiltration attempt it is.
  verdict refuse(exchange& ex, std::size_t secret) const {
    const auto& s = secrets_[secret];
    // A method outside HTTP's registry may be the placeholder itself: not repeated in the record.
    if (ex.request != nullptr && !ex.connect &&
        ex.request->method() == boost::beast::http::verb::unknown)
      ex.record.method = "[unregistered]";
    AIRLOCK_LOG(warn, "proxy", "exfiltration attempt: agent ", ex.record.agent,
                " sent the placeholder of secret ", s.name, " to ", ex.target.host.text, ':',
                ex.target.port, " (refused)");
    return verdict::refuse(core::errc::placeholder_refused,
                           core::str_cat("the placeholder of secret ", s.name,
                                         " may not be sent to ", ex.target.host.text));
  }

  // Not an exfiltration attempt by itself (the host is the secret's), but the value would land
  // where no credential goes: a field the host keeps, forwards or shows.
  verdict refuse_misplaced(exchange& ex, const misplacement& m) const {
    const auto& s = secrets_[m.secret];
    if (m.where == "the method") ex.record.method = "[unregistered]";  // not repeated
    AIRLOCK_LOG(warn, "proxy", "misplaced placeholder: agent ", ex.record.agent,
                " sent the placeholder of secret ", s.name, " to ", ex.target.host.text, ':',
                ex.target.port, " in ", m.where, ", where secrets.", s.name,
                ".swap_in does not swap it (refused)");
    return verdict::refuse(
        core::errc::placeholder_misplaced,
        core::str_cat("the placeholder of secret ", s.name, " may not be sent in ", m.where,
                      " (see secrets.", s.name, ".swap_in)"));
  }

  std::span<const policy::compiled_secret> secrets_;
  std::optional<placeholder_scanner> scan_;
};

class placeholder_require final : public filter {
 public:
  verdict on_request_head(exchange& ex) override {
    if (ex.connect) return verdict::next();
    const auto secrets = ex.snapshot->secrets();
    for (std::size_t i : ex.rule->inject.require) {
      if (contains(ex.placeholders, i)) continue;
      return verdict::refuse(
          core::errc::placeholder_required,
          core::str_cat("rule ", ex.rule->name, " requires the placeholder of secret ",
                        secrets[i].name));
    }
    return verdict::next();
  }
};

class injection final : public filter {
 public:
  explicit injection(std::span<const policy::compiled_secret> secrets) : secrets_(secrets) {}

  verdict on_forward(exchange& ex) override {
    swap_placeholders(secrets_, ex.placeholders, *ex.request, ex.path_and_query);
    auto& injected = ex.record.injected;
    for (std::size_t i : ex.placeholders)
      injected.push_back(secrets_[i].name);
    const auto& inject = ex.rule->inject;
    if (!inject.active) return verdict::next();
    auto out = apply_injection(inject, secrets_, ex.target.host, *ex.request, ex.path_and_query);
    if (out.error != core::errc::ok) return verdict::refuse(out.error, std::move(out.detail));
    for (std::size_t i : inject.secrets)
      if (!contains(ex.placeholders, i)) injected.push_back(secrets_[i].name);
    return verdict::next();
  }

 private:
  std::span<const policy::compiled_secret> secrets_;
};

}  // namespace

placeholder_guard_factory::placeholder_guard_factory(
    std::span<const policy::compiled_secret> secrets)
    : secrets_(secrets), any_placeholder_(any_placeholder(secrets)) {}

filter* placeholder_guard_factory::create(const exchange&, std::pmr::memory_resource& arena) const {
  if (!any_placeholder_) return nullptr;
  return make<placeholder_guard>(arena, secrets_);
}

filter* placeholder_require_factory::create(const exchange& ex,
                                            std::pmr::memory_resource& arena) const {
  if (ex.connect) return nullptr;
  return make<placeholder_require>(arena);
}

filter* injection_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  if (ex.connect) return nullptr;
  return make<injection>(arena, secrets_);
}

}  // namespace airlock::filters::credentials
