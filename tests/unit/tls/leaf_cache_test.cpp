#include "tls/leaf_cache.hpp"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "minter_fixture.hpp"
#include "test_util.hpp"

namespace airlock::tls {
namespace {

using namespace std::chrono_literals;

class TlsLeafCacheTest : public test::MinterTest {
 protected:
  std::shared_ptr<const leaf_certificate> get(leaf_cache& cache, std::string_view host) {
    std::string error;
    auto leaf = cache.get(host, error);
    EXPECT_TRUE(leaf) << host << ": " << error;
    return leaf;
  }
};

TEST_F(TlsLeafCacheTest, SecondLookupHits) {
  std::vector<leaf_cache_event> events;
  leaf_cache_options options;
  options.on_event = [&](leaf_cache_event e) { events.push_back(e); };
  leaf_cache cache(minter_, options);
  auto a = get(cache, "api.example.com");
  auto b = get(cache, "api.example.com");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a, b);  // the same object, not an equal copy
  // Case and a trailing dot do not make a second entry.
  EXPECT_EQ(get(cache, "API.example.COM."), a);
  const auto st = cache.stats();
  EXPECT_EQ(st.mints, 1u);
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(events, (std::vector<leaf_cache_event>{leaf_cache_event::mint, leaf_cache_event::hit,
                                                   leaf_cache_event::hit}));
}

TEST_F(TlsLeafCacheTest, FurtherNamesAreCachedApart) {
  leaf_cache cache(minter_);
  std::string error;
  auto plain = get(cache, "127.0.0.1");
  const std::vector<leaf_name> also{{false, "localhost"}};
  auto with = cache.get("127.0.0.1", also, error);
  ASSERT_TRUE(plain && with) << error;
  EXPECT_NE(plain, with);
  EXPECT_EQ(X509_check_host(with->cert(), "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(plain->cert(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(cache.get("127.0.0.1", also, error), with);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(TlsLeafCacheTest, EvictsTheLeastRecentlyUsedAtCapacity) {
  leaf_cache_options options;
  options.capacity = 3;
  options.shards = 1;  // exact LRU
  leaf_cache cache(minter_, options);
  auto a = get(cache, "a.example");
  auto b = get(cache, "b.example");
  auto c = get(cache, "c.example");
  EXPECT_EQ(get(cache, "a.example"), a);  // a is now the most recent; b the least
  get(cache, "d.example");
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(get(cache, "a.example"), a);
  EXPECT_EQ(get(cache, "c.example"), c);
  EXPECT_EQ(cache.stats().mints, 4u);
  EXPECT_NE(get(cache, "b.example"), b);  // evicted: minted again
  EXPECT_EQ(cache.stats().mints, 5u);
  EXPECT_EQ(cache.size(), 3u);
}

TEST_F(TlsLeafCacheTest, ShardedCacheNeverExceedsCapacity) {
  leaf_cache_options options;
  options.capacity = 10;  // 16 shards are clamped to 10 of one entry each
  leaf_cache cache(minter_, options);
  for (int i = 0; i < 100; ++i)
    get(cache, "h" + std::to_string(i) + ".example");
  EXPECT_LE(cache.size(), 10u);
  const auto st = cache.stats();
  EXPECT_EQ(st.mints, 100u);
  EXPECT_EQ(st.evictions, st.mints - cache.size());
}

TEST_F(TlsLeafCacheTest, RenewsWithinADayOfExpiry) {
  auto now = std::chrono::system_clock::now();
  leaf_cache_options options;
  options.clock = [&] { return now; };
  leaf_cache cache(minter_, options);
  auto first = get(cache, "api.example.com");
  now += 5 * 24h;  // two days left: still served
  EXPECT_EQ(get(cache, "api.example.com"), first);
  now += 24h + 1min;  // less than a day left: renewed
  auto renewed = get(cache, "api.example.com");
  ASSERT_TRUE(renewed);
  EXPECT_NE(renewed, first);
  EXPECT_GT(renewed->not_after(), first->not_after());
  EXPECT_GT(renewed->not_after() - now, 6 * 24h);
  EXPECT_EQ(get(cache, "api.example.com"), renewed);
  const auto st = cache.stats();
  EXPECT_EQ(st.renewals, 1u);
  EXPECT_EQ(st.mints, 2u);
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST_F(TlsLeafCacheTest, LeafEndingWithTheCaIsServedUntilItExpires) {
  test::temp_dir short_dir;
  test::cert_spec spec;
  spec.not_after = 48h;
  test::write_self_signed(spec, short_dir / "ca.crt", short_dir / "ca.key");
  auto loaded = certificate_authority::load(short_dir / "ca.crt", short_dir / "ca.key");
  ASSERT_TRUE(loaded.ca) << loaded.error;
  std::string error;
  auto minter = leaf_minter::create(loaded.ca, error);
  ASSERT_TRUE(minter) << error;
  auto now = std::chrono::system_clock::now();
  leaf_cache_options options;
  options.clock = [&] { return now; };
  leaf_cache cache(minter, options);
  auto first = get(cache, "api.example.com");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->not_after(), loaded.ca->not_after());
  now += 30h;  // 18 h left, inside renew_before, but a new leaf could not last longer
  EXPECT_EQ(get(cache, "api.example.com"), first);
  EXPECT_EQ(get(cache, "api.example.com"), first);
  EXPECT_EQ(cache.stats().mints, 1u);
  now += 19h;  // leaf and CA have expired: nothing valid to serve
  EXPECT_FALSE(cache.get("api.example.com", error));
  EXPECT_NE(error.find("expired"), std::string::npos) << error;
  EXPECT_EQ(cache.stats().mint_failures, 1u);
}

TEST_F(TlsLeafCacheTest, InvalidNamesAreCountedAndNotCached) {
  leaf_cache cache(minter_);
  std::string error;
  EXPECT_FALSE(cache.get("*.example.com", error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(cache.get("", error));
  EXPECT_EQ(cache.stats().mint_failures, 2u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(TlsLeafCacheTest, ConcurrentLookupsFromEightThreadsMintEachNameOnce) {
  constexpr int threads = 8;
  constexpr int names = 64;
  constexpr int rounds = 3;
  leaf_cache cache(minter_);
  std::mutex seen_mutex;
  std::map<std::string, std::set<const leaf_certificate*>> seen;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<std::string> order;
      for (int i = 0; i < names; ++i)
        order.push_back("n" + std::to_string(i) + ".example");
      std::mt19937 rng(static_cast<unsigned>(t));  // deterministic, different per thread
      std::map<std::string, std::set<const leaf_certificate*>> local;
      for (int r = 0; r < rounds; ++r) {
        std::shuffle(order.begin(), order.end(), rng);
        for (const auto& n : order) {
          std::string error;
          auto leaf = cache.get(n, error);
          if (leaf) local[n].insert(leaf.get());
        }
      }
      std::lock_guard lock(seen_mutex);
      for (auto& [n, ptrs] : local)
        seen[n].insert(ptrs.begin(), ptrs.end());
    });
  }
  for (auto& w : workers)
    w.join();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(names));
  for (const auto& [n, ptrs] : seen)
    EXPECT_EQ(ptrs.size(), 1u) << n << " minted twice";
  const auto st = cache.stats();
  EXPECT_EQ(st.mints, static_cast<std::uint64_t>(names));
  EXPECT_EQ(st.hits, static_cast<std::uint64_t>(threads * rounds * names - names));
  EXPECT_EQ(st.mint_failures, 0u);
  EXPECT_EQ(cache.size(), static_cast<std::size_t>(names));
}

}  // namespace
}  // namespace airlock::tls
