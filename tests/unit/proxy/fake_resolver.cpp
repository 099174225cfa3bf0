// Test seam for upstream_connector_test: asio resolves names with getaddrinfo on its private
// thread, and a definition in the test executable takes precedence over the C library's. A few
// names under the reserved .test TLD (RFC 6761) get chosen loopback answers or stall; every
// other name goes to the real getaddrinfo. No DNS traffic is ever sent for the .test names.

#include <dlfcn.h>
#include <netdb.h>

#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

namespace {

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
    // A resolver that does not answer in time (an unreachable name server).
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return EAI_AGAIN;
  }
  if (name == "empty.test") return EAI_NODATA;
  return real_getaddrinfo()(node, service, hints, res);
}
