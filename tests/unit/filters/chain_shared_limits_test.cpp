// The rate-limit filter under state: redis, in the chain of a real policy: an empty lease is a
// `wait` whose pending (lease_wait) leases from a real redis-server and resumes the chain; the
// next requests admit from the lease without waiting; an empty shared bucket refuses
// (rate_limited) after a wait; a dead store under on_unavailable: deny refuses at once.
#include "filters/chain.hpp"
#include "filters/pipeline.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/rate_limit/shared_store.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include "../state/redis_server.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

#include <gtest/gtest.h>

#include <future>

namespace airlock::filters {
namespace {
namespace http = boost::beast::http;
using namespace std::chrono_literals;

std::int64_t fixed_clock() noexcept {
  return 1'000'000'000'000;
}

class shared_chain_test : public ::testing::Test {
 protected:
  void start(std::uint16_t redis_port, bool deny) {
    state::client_options o;
    o.host = "127.0.0.1";
    o.port = redis_port;
    o.timeout = 500ms;
    rate_limit::store_settings s;
    s.key_prefix = "chain:";
    s.deny_when_unavailable = deny;
    store_ = std::make_unique<rate_limit::shared_store>(std::move(o), s);
    rates_.use_store(store_.get());
    auto r = policy::load_string(R"(
agents:
  default: {rules: [api], rate: {requests_per_second: 8}}
rules:
  - {name: api, hosts: [api.example.com], ports: [80]}
)",
                                 "chain.yaml");
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    lasting_state state{&rates_};
    auto built = pipeline::build(r.policy, state);
    ASSERT_TRUE(built.built);
    pipeline_ = built.built;
  }

  exchange& request() {
    req_ = {};
    req_.method(http::verb::get);
    req_.target("/");
    ex_ = std::make_unique<exchange>();
    auto& ex = *ex_;
    ex.snapshot = &pipeline_->snapshot();
    ex.request = &req_;
    ex.target.host = *net::normalize_host("api.example.com");
    ex.target.port = 80;
    ex.path_and_query = "/";
    ex.path = "/";
    ex.agent = ex.snapshot->find_agent("default");
    ex.record.agent = "default";
    ex.body_limit = ex.snapshot->limits().body_bytes;
    ex.clock = fixed_clock;
    return ex;
  }

  // The head hooks, with any wait awaited here (as the session does, bounded).
  verdict head(chain& c) {
    verdict v = c.request_head();
    for (int i = 0; i < 4 && v.waits(); ++i) {
      ++waits_;
      auto done = std::make_shared<std::promise<verdict>>();
      auto f = done->get_future();
      v.waiting->start([done](verdict outcome) { done->set_value(std::move(outcome)); });
      if (f.wait_for(10s) != std::future_status::ready)
        return verdict::fail(core::errc::decision_timeout, "test");
      v = c.resume(f.get());
    }
    return v;
  }

  std::unique_ptr<rate_limit::shared_store> store_;
  rate_limit::registry rates_;  // after store_: destroyed first
  std::shared_ptr<const pipeline> pipeline_;
  http::request<http::empty_body> req_;
  std::unique_ptr<exchange> ex_;
  int waits_ = 0;
};

TEST_F(shared_chain_test, EmptyLeaseWaitsThenTheLeaseAdmitsUntilTheSharedBucketIsEmpty) {
  state::test::redis_server server;
  start(server.port(), false);
  for (int i = 0; i < 1000 && !store_->available(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(store_->available());
  int admitted = 0;
  verdict last;
  for (int i = 0; i < 12; ++i) {
    chain c(pipeline_->factories(), request());
    last = head(c);
    if (last.passes()) ++admitted;
  }
  EXPECT_EQ(admitted, 8);  // the burst of the fleet's bucket
  EXPECT_TRUE(last.refused());
  EXPECT_EQ(last.reason, core::errc::rate_limited);
  // Leases of 2 (8 / 4): one wait per two requests until the bucket is empty, then one more
  // that learns it is empty; the refusals after it are local.
  EXPECT_EQ(waits_, 5);
}

TEST_F(shared_chain_test, DeadStoreWithDenyRefusesAtOnce) {
  start(state::test::free_port(), true);
  chain c(pipeline_->factories(), request());
  const verdict v = head(c);
  EXPECT_TRUE(v.refused());
  EXPECT_EQ(v.reason, core::errc::store_unavailable);
  EXPECT_EQ(waits_, 0);
}

}  // namespace
}  // namespace airlock::filters
