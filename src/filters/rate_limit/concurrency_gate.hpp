#pragma once
// A cap on requests and tunnels in flight at once: an atomic counter, and a ticket that holds
// one slot for as long as it lives (RAII, movable). The cap is passed in by the caller, so a
// reload that changes it keeps the count: lowering the cap below the count refuses new entries
// until enough tickets are gone.
//
// @par Thread Safety
// concurrency_gate: every member function may be called concurrently (lock-free).
// slot_ticket: a plain movable value; distinct tickets may be destroyed concurrently.

#include <atomic>
#include <cstdint>
#include <memory>

namespace airlock::filters::rate_limit {

class concurrency_gate {
 public:
  // Takes a slot when fewer than `cap` are taken. Never lets the count exceed `cap`.
  bool try_enter(std::uint32_t cap) noexcept;
  void leave() noexcept;
  std::uint32_t in_flight() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> count_{0};
};

// One slot of a gate. Shares ownership of the gate (usually through an aliasing shared_ptr to
// the state that contains it), so a ticket stays valid even when the registry and every plan
// have dropped that state.
class slot_ticket {
 public:
  slot_ticket() noexcept = default;
  // Takes ownership of an entered slot of `gate`.
  explicit slot_ticket(std::shared_ptr<concurrency_gate> gate) noexcept : gate_(std::move(gate)) {}
  slot_ticket(slot_ticket&& other) noexcept = default;
  slot_ticket& operator=(slot_ticket&& other) noexcept {
    if (this != &other) {
      reset();
      gate_ = std::move(other.gate_);
    }
    return *this;
  }
  slot_ticket(const slot_ticket&) = delete;
  slot_ticket& operator=(const slot_ticket&) = delete;
  ~slot_ticket() { reset(); }

  // Gives the slot back now (idempotent).
  void reset() noexcept {
    if (gate_) {
      gate_->leave();
      gate_.reset();
    }
  }
  bool holds() const noexcept { return gate_ != nullptr; }
  explicit operator bool() const noexcept { return holds(); }

 private:
  std::shared_ptr<concurrency_gate> gate_;
};

}  // namespace airlock::filters::rate_limit
