#pragma once
// The filter chain of one exchange, and the list of factories it is made from (one list per
// policy snapshot, see pipeline.hpp).
//
// The chain runs the request hooks in order and stops at the first refusal, failure or wait;
// the response hooks run in reverse order. It applies `mode: report` once for every filter: a
// reportable refusal (verdict::violation) under report mode is recorded and the chain carries
// on. Refusals and failures are written into the exchange's record here, so the session only
// sends the answer.
//
// A wait stops the chain where it is; the session awaits the pending outcome (under its own
// timeout) and calls resume() with it, which stands for the waiting filter's verdict.
//
// @par Thread Safety
// A chain is used by one exchange on one thread; the factories are shared and immutable.

#include "filters/filter.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <vector>

namespace airlock::filters {

class chain {
 public:
  // Makes the exchange's filters from `factories`, in order. `ex` outlives the chain.
  chain(std::span<const std::unique_ptr<filter_factory>> factories, exchange& ex);
  ~chain();
  chain(const chain&) = delete;
  chain& operator=(const chain&) = delete;

  // Request head hooks from where the chain stopped: next when every filter passed, else the
  // refusal, failure or wait that stopped it (refusals and failures already recorded).
  verdict request_head();
  // After a wait: `outcome` is the waiting filter's verdict (a wait again counts as an internal
  // error: fail closed); then the head hooks carry on.
  verdict resume(verdict outcome);

  // The most any filter asks of the request body: none, observe, or whole.
  body_use request_body_use() const;
  verdict request_body(std::string_view piece, bool last);

  // Every filter's on_forward, in order; stops at the first that does not pass.
  verdict forward();

  verdict response_head();
  // Whether any filter watches or rewrites the response body (asked after response_head()).
  body_use response_body_use() const;
  // Passes `data` through every filter that uses the response body, in reverse order; what
  // reaches the client is appended to `out`. `enough` is set when a filter wants no more.
  verdict response_body(std::string_view data, bool last, std::string& out, bool& enough);

  // A WebSocket message through every filter's on_message (client messages in order, origin
  // messages in reverse); stops at the first that does not pass (recorded, as for a body).
  verdict message(const filters::message& m);

  // Trailer fields through every filter's on_trailers (the request's in order, the response's in
  // reverse); stops at the first that does not pass (recorded, as for a body).
  verdict trailers(boost::beast::http::fields& fields, bool response);

  // Calls every filter's on_answered (once; apply() calls it for a refusal or failure the chain
  // records, end() if nobody did): the session calls it as the origin's answer has been read
  // whole, before the last of it is written to the client.
  void answered();
  // Calls every filter's on_end (once; the destructor calls it if nobody did).
  void end();

  exchange& ex() noexcept { return ex_; }

 private:
  verdict apply(verdict v);
  // Every filter's scrub_record (filter.hpp), once the record repeats something new.
  void scrub();

  exchange& ex_;
  // The filters of one exchange and the list of them, inline: every filter a rule can have
  // fits (the redaction filter alone took the arena past 512 bytes, a heap block per request).
  std::array<std::byte, 1536> inline_;
  std::pmr::monotonic_buffer_resource arena_;
  std::pmr::vector<filter*> filters_;
  std::size_t next_head_ = 0;  // the next filter whose request head hook runs
  bool answered_ = false;
  bool ended_ = false;
  std::string scratch_[2];  // between transforming response filters
};

}  // namespace airlock::filters
