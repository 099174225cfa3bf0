#pragma once
// Writes one exchange's record (filters::exchange_record) as its audit line and metrics when it
// goes out of scope, so refused and failed exchanges are recorded exactly like successful ones:
// one record per exchange, whatever path it took.

#include "filters/exchange.hpp"

#include <chrono>
#include <string_view>

namespace airlock::proxy {

class worker;

class recorder {
 public:
  recorder(worker& w, std::string_view client, std::string_view policy_version);
  ~recorder();
  recorder(const recorder&) = delete;
  recorder& operator=(const recorder&) = delete;

  filters::exchange ex;
  filters::exchange_record& rec() noexcept { return ex.record; }

 private:
  worker& worker_;
  std::string_view client_;
  std::string_view policy_version_;
  std::chrono::system_clock::time_point wall_start_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace airlock::proxy
