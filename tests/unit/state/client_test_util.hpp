#pragma once
// Helpers of the state client's tests: a condition awaited with a deadline, and one command
// awaited (bounded: the client answers every command within its timeout).

#include "state/client.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace airlock::state::test {

template <class F>
bool eventually(F&& f, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

inline reply call(client& c, std::vector<std::string> args) {
  auto p = std::make_shared<std::promise<reply>>();
  auto f = p->get_future();
  c.command(std::move(args), [p](reply r) { p->set_value(std::move(r)); });
  if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    return reply::unavailable("test: no answer");
  return f.get();
}

}  // namespace airlock::state::test
