#include "filters/chain.hpp"

#include "core/str_cat.hpp"

#include <algorithm>
#include <utility>

namespace airlock::filters {

verdict pending::timed_out(std::chrono::milliseconds waited) const {
  return verdict::refuse(core::errc::decision_timeout,
                         core::str_cat("no decision within ", waited.count(), " ms"));
}

chain::chain(std::span<const std::unique_ptr<filter_factory>> factories, exchange& ex)
    : ex_(ex), arena_(inline_.data(), inline_.size()), filters_(&arena_) {
  filters_.reserve(factories.size());
  for (const auto& f : factories)
    if (filter* made = f->create(ex, arena_)) filters_.push_back(made);
  ex_.record.chain = this;
}

chain::~chain() {
  end();
  ex_.record.chain = nullptr;
  // The arena frees the memory; the filters' destructors run here.
  for (auto it = filters_.rbegin(); it != filters_.rend(); ++it)
    (*it)->~filter();
}

void chain::answered() {
  if (answered_) return;
  answered_ = true;
  for (filter* f : filters_)
    f->on_answered(ex_);
}

void chain::end() {
  if (ended_) return;
  ended_ = true;
  answered();
  for (filter* f : filters_)
    f->on_end(ex_);
  // Last, for what the session wrote itself after the head hooks (a tunnel's SNI refused, an
  // upstream's failure naming the host).
  scrub();
}

void chain::scrub() {
  for (filter* f : filters_)
    f->scrub_record(ex_);
}

verdict chain::apply(verdict v) {
  auto& rec = ex_.record;
  switch (v.what) {
    case verdict::kind::next:
    case verdict::kind::wait:
      return v;
    case verdict::kind::refuse:
      if (v.reportable && ex_.report_mode) {
        rec.report(v.reason, std::move(v.detail));
        scrub();
        return verdict::next();
      }
      rec.retry_after = v.retry_after;
      rec.answer = v.answer;
      rec.refuse(v.reason, v.detail);
      scrub();
      answered();
      // The session answers from the record; the verdict keeps only what the record says.
      v.detail = rec.detail;
      v.answer = rec.answer;
      return v;
    case verdict::kind::fail:
      rec.failed_upstream(v.reason);
      rec.detail = v.detail;
      scrub();
      answered();
      v.detail = rec.detail;
      return v;
  }
  return v;
}

verdict chain::message(const filters::message& m) {
  const auto one = [&](filter* f) {
    auto v = f->on_message(ex_, m);
    // A wait has nothing to resume here (messages do not wait): fail closed.
    if (v.waits()) v = verdict::refuse(core::errc::internal_error, "a message filter waited");
    return v.passes() ? v : apply(std::move(v));
  };
  if (m.from == message_from::client) {
    for (filter* f : filters_)
      if (auto v = one(f); !v.passes()) return v;
  } else {
    for (auto it = filters_.rbegin(); it != filters_.rend(); ++it)
      if (auto v = one(*it); !v.passes()) return v;
  }
  return verdict::next();
}

verdict chain::trailers(boost::beast::http::fields& fields, bool response) {
  const auto one = [&](filter* f) {
    auto v = f->on_trailers(ex_, fields, response);
    // Trailers arrive mid-stream: nothing to resume there, fail closed.
    if (v.waits()) v = verdict::fail(core::errc::internal_error, "a trailer filter waited");
    return v.passes() ? v : apply(std::move(v));
  };
  if (!response) {
    for (filter* f : filters_)
      if (auto v = one(f); !v.passes()) return v;
  } else {
    for (auto it = filters_.rbegin(); it != filters_.rend(); ++it)
      if (auto v = one(*it); !v.passes()) return v;
  }
  return verdict::next();
}

verdict chain::request_head() {
  while (next_head_ < filters_.size()) {
    auto v = filters_[next_head_]->on_request_head(ex_);
    if (v.waits()) return v;  // this filter's outcome comes with resume()
    ++next_head_;
    if (v.passes()) continue;  // the common case: nothing to record
    v = apply(std::move(v));
    if (!v.passes()) return v;
  }
  return verdict::next();
}

verdict chain::resume(verdict outcome) {
  if (outcome.waits() || next_head_ >= filters_.size()) {
    // A pending outcome cannot be another wait, and there must be a filter waiting.
    ++next_head_;
    return apply(verdict::refuse(core::errc::internal_error, "a filter's wait did not resolve"));
  }
  ++next_head_;
  auto v = apply(std::move(outcome));
  if (!v.passes()) return v;
  return request_head();
}

body_use chain::request_body_use() const {
  body_use most = body_use::none;
  for (const filter* f : filters_) {
    const auto u = f->request_body_use(ex_);
    if (u == body_use::whole) return u;
    if (u != body_use::none) most = body_use::observe;
  }
  return most;
}

verdict chain::request_body(std::string_view piece, bool last) {
  for (filter* f : filters_) {
    if (f->request_body_use(ex_) == body_use::none) continue;
    auto v = apply(f->on_request_body(ex_, piece, last));
    if (!v.passes()) return v;
  }
  return verdict::next();
}

verdict chain::forward() {
  for (filter* f : filters_) {
    auto v = f->on_forward(ex_);
    if (v.passes()) continue;
    v = apply(std::move(v));
    if (v.waits())
      return apply(verdict::refuse(core::errc::internal_error, "a filter waited to forward"));
    if (!v.passes()) return v;
  }
  return verdict::next();
}

verdict chain::response_head() {
  for (auto it = filters_.rbegin(); it != filters_.rend(); ++it) {
    auto v = (*it)->on_response_head(ex_);
    if (v.passes()) continue;  // the common case: nothing to record
    v = apply(std::move(v));
    // A response hook cannot wait (the upstream is streaming): fail closed if one tries.
    if (v.waits())
      return apply(verdict::fail(core::errc::internal_error, "a response filter waited"));
    if (!v.passes()) return v;
  }
  return verdict::next();
}

body_use chain::response_body_use() const {
  body_use most = body_use::none;
  for (const filter* f : filters_) {
    const auto u = f->response_body_use(ex_);
    if (u == body_use::transform) return u;
    if (u != body_use::none) most = body_use::observe;
  }
  return most;
}

verdict chain::response_body(std::string_view data, bool last, std::string& out, bool& enough) {
  // Each transforming filter's output is the next one's input; the last output goes to `out`.
  std::string_view current = data;
  int slot = 0;
  for (auto it = filters_.rbegin(); it != filters_.rend(); ++it) {
    const auto use = (*it)->response_body_use(ex_);
    if (use == body_use::none) continue;
    body_chunk chunk{current, last, &scratch_[slot], false};
    chunk.out->clear();
    auto v = apply((*it)->on_response_body(ex_, chunk));
    if (v.waits())
      return apply(verdict::fail(core::errc::internal_error, "a response filter waited"));
    if (!v.passes()) return v;
    enough = enough || chunk.enough;
    if (use == body_use::transform) {
      current = *chunk.out;
      slot ^= 1;
    }
  }
  out.append(current.data(), current.size());
  return verdict::next();
}

}  // namespace airlock::filters
