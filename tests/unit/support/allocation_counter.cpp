// The replaced global allocation functions behind allocation_counter.hpp.
#include "allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace airlock::test {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace airlock::test

using airlock::test::allocations;
using airlock::test::counting;

void* operator new(std::size_t size) {
  if (counting) ++allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
// Every replaceable non-aligned form, so that no allocation pairs ours with the runtime's
// (AddressSanitizer checks that new and delete match).
void* operator new[](std::size_t size) {
  return operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (counting) ++allocations;
  return std::malloc(size ? size : 1);
}
void* operator new[](std::size_t size, const std::nothrow_t& t) noexcept {
  return operator new(size, t);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
