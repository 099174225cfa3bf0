// Test seam for upstream_connector_test: asio resolves names with getaddrinfo on its private
// thread, and a definition in the test executable takes precedence over the C library's. A few
// names under the reserved .test TLD (RFC 6761) get chosen loopback answers or stall; every
// other name goes to the real getaddrinfo. No DNS traffic is ever sent for the .test names.

#include "fake_resolver.hpp"

#include <dlfcn.h>
#include <netdb.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string_view>

namespace {

struct slow_gate {
  std::mutex mu;
  std::condition_variable cv;
  bool held = true;
  int waiting = 0;
};

slow_gate& gate() {
  static slow_gate g;
  return g;
}

using getaddrinfo_fn = int (*)(const char*, const char*, const addrinfo*, addrinfo**);

getaddrinfo_fn real_getaddrinfo() {
  static auto fn = reinterpret_cast<getaddrinfo_fn>(dlsym(RTLD_NEXT, "getaddrinfo"));
  return fn;
}

// Numeric answers for one address, joined into one list (glibc frees entry by entry).
int numeric(const char* address, const char* service, const addrinfo* hints, addrinfo** tail) {
  addrinfo h{};
  if (hints) h = *hints;
  h.ai_flags = (h.ai_flags & ~AI_ADDRCONFIG) | AI_NUMERICHOST;
  h.ai_family = AF_UNSPEC;
  return real_getaddrinfo()(address, service, &h, tail);
}

int answer(std::initializer_list<const char*> addresses, const char* service, const addrinfo* hints,
           addrinfo** res) {
  *res = nullptr;
  addrinfo** tail = res;
  for (const char* a : addresses) {
    if (int rc = numeric(a, service, hints, tail); rc != 0) {
      if (*res) freeaddrinfo(*res);
      *res = nullptr;
      return rc;
    }
    while (*tail)
      tail = &(*tail)->ai_next;
  }
  return 0;
}

}  // namespace

extern "C" int getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                           addrinfo** res) {
  std::string_view name = node ? node : "";
  if (name == "origin.test") return answer({"127.0.0.1"}, service, hints, res);
  if (name == "mixed.test") return answer({"127.0.0.1", "127.0.0.2"}, service, hints, res);
  if (name == "slow.test") {
    // A resolver that does not answer (an unreachable name server) until the test says so.
    auto& g = gate();
    std::unique_lock lock(g.mu);
    ++g.waiting;
    g.cv.wait_for(lock, std::chrono::seconds(30), [&] { return !g.held; });
    --g.waiting;
    return EAI_AGAIN;
  }
  if (name == "empty.test") return EAI_NODATA;
  return real_getaddrinfo()(node, service, hints, res);
}

namespace airlock::proxy::test {

void hold_slow_lookups() {
  std::lock_guard lock(gate().mu);
  gate().held = true;
}

void release_slow_lookups() {
  {
    std::lock_guard lock(gate().mu);
    gate().held = false;
  }
  gate().cv.notify_all();
}

int slow_lookups_waiting() {
  std::lock_guard lock(gate().mu);
  return gate().waiting;
}

}  // namespace airlock::proxy::test
