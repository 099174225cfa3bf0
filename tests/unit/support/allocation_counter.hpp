// Counts the heap allocations this thread makes while counting is on: the hot paths (decide(),
// admit(), throttle()) must not allocate. allocation_counter.cpp replaces every non-aligned
// form of operator new/delete; a test executable that uses this lists that file among its
// sources (tests/unit/CMakeLists.txt: airlock_add_allocation_counter).
#pragma once

#include <cstddef>

namespace airlock::test {

// This thread's count and switch, read by the replaced operator new.
extern thread_local bool counting;
extern thread_local std::size_t allocations;

// Sets the count to zero and counts until the end of the scope.
struct count_scope {
  count_scope() {
    allocations = 0;
    counting = true;
  }
  ~count_scope() { counting = false; }
  count_scope(const count_scope&) = delete;
  count_scope& operator=(const count_scope&) = delete;
};

}  // namespace airlock::test
