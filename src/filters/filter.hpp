#pragma once
// The filter interface: one control (a policy decision, a rate limit, a validation, credential
// injection, redaction, ...) applied to one exchange. The shape of proxygen's pass-through
// Filter and Envoy's config/filter split, without Envoy's five statuses:
//
//   - a `filter_factory` is built once per policy snapshot (its shared, immutable config);
//   - a `filter` is made per exchange and holds that exchange's state only where it needs any;
//   - each hook does no I/O and answers with a `verdict`: next, refuse (the proxy answers the
//     request itself, for a reason that is also the Proxy-Status token, the metric label and
//     the audit reason), fail (the upstream's answer cannot be passed on), or wait (something
//     outside must answer first: a limit kept in a shared store, a person's approval).
//
// Hooks run in chain order for the request and in reverse order for the response (Envoy's
// decode and encode paths). `mode: report` is applied once, by the chain, to the refusals a
// filter marks as violations (verdict::violation); a filter never looks at report mode itself.
//
// @par Thread Safety
// Factories are immutable after construction and shared by every worker thread; a filter is
// used by one exchange on one thread.

#include "core/errc.hpp"
#include "filters/exchange.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>

namespace airlock::filters {

class pending;

// The answer of one hook.
struct verdict {
  enum class kind : std::uint8_t {
    next,    // carry on with the next filter
    refuse,  // the proxy answers the request itself
    fail,    // the upstream failed (or its answer cannot be passed on): decision "error"
    wait,    // await `waiting`, then resume the chain with its outcome
  };
  kind what = kind::next;
  // A refusal that report mode turns into a record (rules, limits, parameter checks); plain
  // refusals (placeholders, the kill switch, malformed input, internal errors) always hold.
  bool reportable = false;
  core::errc reason = core::errc::ok;
  std::string detail;             // names and constraints only, never a request value
  std::uint32_t retry_after = 0;  // seconds, for a 429's Retry-After
  std::shared_ptr<pending> waiting;
  // A refusal answered in the client's protocol (exchange.hpp); null: the proxy's text answer.
  std::shared_ptr<const protocol_answer> answer;

  static verdict next() noexcept { return {}; }
  static verdict refuse(core::errc why, std::string detail) {
    return {kind::refuse, false, why, std::move(detail), 0, {}, {}};
  }
  static verdict violation(core::errc why, std::string detail) {
    return {kind::refuse, true, why, std::move(detail), 0, {}, {}};
  }
  // A violation answered with `a` instead of the proxy's text answer.
  static verdict violation(core::errc why, std::string detail, protocol_answer a) {
    verdict v = violation(why, std::move(detail));
    v.answer = std::make_shared<const protocol_answer>(std::move(a));
    return v;
  }
  static verdict fail(core::errc why, std::string detail) {
    return {kind::fail, false, why, std::move(detail), 0, {}, {}};
  }
  static verdict wait(std::shared_ptr<pending> p) {
    return {kind::wait, false, core::errc::ok, {}, 0, std::move(p), {}};
  }

  bool passes() const noexcept { return what == kind::next; }
  bool refused() const noexcept { return what == kind::refuse; }
  bool failed() const noexcept { return what == kind::fail; }
  bool waits() const noexcept { return what == kind::wait; }
};

// Something a filter waits for outside the chain: an answer from a shared store, a person's
// approval. The session starts it, awaits the outcome under its own timeout and cancellation,
// then resumes the chain with it (chain::resume). The outcome stands for the waiting filter's
// verdict: next, refuse or fail (never wait again).
class pending {
 public:
  virtual ~pending() = default;
  // Starts waiting; `done` is called exactly once with the outcome, from any thread (the session
  // takes it back to its own). It may be called before start() returns.
  virtual void start(std::function<void(verdict)> done) = 0;
  // The session stopped waiting (timeout, client gone, shutdown): release what is held. `done`
  // may still be called afterwards and must then be harmless.
  virtual void cancel() noexcept {}
  // The client closed its connection while the session waited: release what is held, as
  // cancel() does (a held request is dropped from the pending approvals and audited so).
  virtual void abandon() noexcept { cancel(); }
  // Whether the session should watch its client while it waits (a person's decision can take
  // minutes; a store's answer cannot), and abandon() the wait when the client goes.
  virtual bool watches_client() const noexcept { return false; }
  // How long the session waits at most, given its own bound (`session_limit`): a person's
  // approval has a timeout of its own, longer than a store's answer needs.
  virtual std::chrono::milliseconds wait_limit(std::chrono::milliseconds session_limit) const {
    return session_limit;
  }
  // The verdict when no outcome came within wait_limit (fail closed).
  virtual verdict timed_out(std::chrono::milliseconds waited) const;
  // The outcome as the session takes it, on its own thread, just before the chain goes on: a
  // wait that took long may check again what changed meanwhile (a held request: the kill
  // switch), whoever decided and on whatever thread.
  virtual verdict settle(verdict outcome) const { return outcome; }
};

// What a filter does with a body, decided per exchange once the head is known.
enum class body_use : std::uint8_t {
  none,       // never called for it
  observe,    // sees every piece as it streams (and may refuse before the piece is sent)
  whole,      // (request bodies) must see all of it before any byte is forwarded
  transform,  // (response bodies) rewrites what passes: its output replaces its input
};

// One piece of a response body on its way through the chain.
struct body_chunk {
  std::string_view data;  // what this filter receives
  bool last = false;      // the body ended (data may be empty then)
  std::string* out;       // a transforming filter appends what may go on now
  bool enough = false;    // a filter has seen enough: read no more, end the body with `last`
};

// One WebSocket message (RFC 6455) on an upgraded exchange, whole: unmasked, inflated, its
// fragments joined. The proxy holds it until every filter passed it; a refusal closes the
// connection with 1008 and the message never reaches the other side.
enum class message_from : std::uint8_t { client, origin };
struct message {
  message_from from = message_from::client;
  // RFC 6455 section 5.2: 1 text, 2 binary, 8 close (the payload is its reason), 9 ping,
  // 10 pong.
  std::uint8_t opcode = 1;
  std::string_view payload;

  bool text() const noexcept { return opcode == 1; }
  bool data() const noexcept { return opcode == 1 || opcode == 2; }
};

class filter {
 public:
  virtual ~filter() = default;

  // The request head is complete and the agent identified. For a CONNECT this is the only
  // request hook; the tunnel (or the intercepted requests inside it) follow.
  virtual verdict on_request_head(exchange&) { return verdict::next(); }
  // How this filter uses the request body (asked after every head hook passed).
  virtual body_use request_body_use(const exchange&) const { return body_use::none; }
  // A piece of the request body before it is sent on (`last`: the body ended). For a filter
  // that wants it whole, one call with all of it.
  virtual verdict on_request_body(exchange&, std::string_view, bool /*last*/) {
    return verdict::next();
  }
  // Every head and body hook passed: the request head is about to be sent upstream (after a body
  // held whole, before a streamed one). The last chance to edit it (credentials go in here, so
  // a refused request never carried them). Not called for a CONNECT.
  virtual verdict on_forward(exchange&) { return verdict::next(); }
  // The response head from the upstream, before it is sent to the client; may be edited.
  virtual verdict on_response_head(exchange&) { return verdict::next(); }
  virtual body_use response_body_use(const exchange&) const { return body_use::none; }
  virtual verdict on_response_body(exchange&, body_chunk&) { return verdict::next(); }
  // After a 101 to a WebSocket upgrade: each message, either way, before it is forwarded
  // (client messages in chain order, origin messages in reverse order, as the body hooks).
  // The same verdicts as the body hooks; a refusal ends the connection (close 1008).
  virtual verdict on_message(exchange&, const message&) { return verdict::next(); }
  // Trailer fields (RFC 9110 section 6.5) after a body: the request's (`response` false, in
  // chain order) before they are sent on, the response's (in reverse order) before the client
  // sees them; may be edited. The same verdicts as the body hooks: a refusal ends the stream.
  virtual verdict on_trailers(exchange&, boost::beast::http::fields&, bool /*response*/) {
    return verdict::next();
  }
  // The origin's answer has been read whole, or the proxy answers instead (a refusal the chain
  // recorded, or an answer the session writes from the record): the exchange needs nothing more
  // of the origin, and the last of the answer is about to reach the client, who may ask again
  // at once on another connection. What an exchange holds for the origin's sake (a `concurrent`
  // slot) goes back here rather than at on_end, which runs only after that last write. At most
  // once (on_end calls it when nothing did); no I/O.
  virtual void on_answered(exchange&) {}
  // The exchange is over (answered, failed or refused) and about to be recorded.
  virtual void on_end(exchange&) {}
  // The record (and, for a refusal, the answer built from it) is about to repeat what the agent
  // chose: the target's host, the method, the path, a detail that quotes a name it sent, a
  // protocol answer. A filter that reads requests for secrets (DLP) takes out what must not be
  // repeated. The chain calls it on every filter, whether or not that filter's request hooks
  // ran (an earlier filter's refusal stops them): each time a refusal, failure or report is
  // written into the record, before the session answers it, and after on_end, before the record
  // is written. Never refuses; no I/O.
  virtual void scrub_record(exchange&) {}
};

// Builds the per-exchange filter. Made once per policy snapshot.
class filter_factory {
 public:
  virtual ~filter_factory() = default;
  // The filter for one exchange, allocated from `arena` (which the chain frees at once when the
  // exchange ends); null when this control has nothing to do for the exchange.
  virtual filter* create(const exchange& ex, std::pmr::memory_resource& arena) const = 0;

 protected:
  template <class F, class... Args>
  static F* make(std::pmr::memory_resource& arena, Args&&... args) {
    void* p = arena.allocate(sizeof(F), alignof(F));
    return new (p) F(std::forward<Args>(args)...);
  }
};

}  // namespace airlock::filters
