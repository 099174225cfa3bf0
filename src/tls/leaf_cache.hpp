#pragma once
// A bounded cache of minted leaves, keyed by canonical host name (see parse_leaf_name), so a
// client that opens many connections to one host costs one signature, not one per connection.
//
// Shape: N shards, each a mutex-protected LRU list with a hash index. The capacity is split
// over the shards, so eviction is LRU within a shard (approximate LRU overall) and the cache
// never holds more than `capacity` leaves. A leaf that is within `renew_before` of its notAfter
// is replaced on lookup (unless it already ends with the CA, which no new leaf can outlast).
// Minting happens while the shard's lock is held: that de-duplicates concurrent lookups of one name
// (exactly one mint; the others wait ~0.1 ms and hit), at the price of lookups of other names in
// the same shard waiting for that one mint.
//
// Thread safety: every member function may be called from any thread at once. on_event is
// called on the looking-up thread, after the shard lock is released.

#include "tls/leaf_minter.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace airlock::tls {

enum class leaf_cache_event {
  hit,          // a cached leaf was returned
  mint,         // a new leaf was minted (first lookup or renewal)
  renewal,      // reported in addition to `mint` when the old leaf was near expiry
  eviction,     // the least recently used leaf of a full shard was dropped
  mint_failed,  // invalid name or signing failure
};

struct leaf_cache_options {
  std::size_t capacity = 1000;
  std::size_t shards = 16;  // clamped to 1..capacity
  std::chrono::seconds renew_before = std::chrono::hours(24);
  // Time source for expiry checks and for the leaves' validity (tests pass a fake clock).
  std::function<std::chrono::system_clock::time_point()> clock;
  // Feeds metrics (telemetry::metrics::leaf_minted / leaf_cache_hit). Must not call back
  // into the cache.
  std::function<void(leaf_cache_event)> on_event;
};

struct leaf_cache_stats {
  std::uint64_t hits = 0;
  std::uint64_t mints = 0;
  std::uint64_t renewals = 0;
  std::uint64_t evictions = 0;
  std::uint64_t mint_failures = 0;
};

class leaf_cache {
 public:
  explicit leaf_cache(std::shared_ptr<const leaf_minter> minter, leaf_cache_options options = {});
  ~leaf_cache();
  leaf_cache(const leaf_cache&) = delete;
  leaf_cache& operator=(const leaf_cache&) = delete;

  // The leaf for host (DNS name or IP literal), minted on a miss. Returns null and sets
  // error when the name is not acceptable or minting fails. If renewal fails while the cached
  // leaf is still valid, the cached leaf is returned (and mint_failed reported).
  std::shared_ptr<const leaf_certificate> get(std::string_view host, std::string& error);
  // The same with further subjectAltName names (see leaf_minter::mint), cached apart from the
  // leaf for the name alone.
  std::shared_ptr<const leaf_certificate> get(std::string_view host,
                                              std::span<const leaf_name> also, std::string& error);

  leaf_cache_stats stats() const noexcept;
  // The minter (and through it the CA) this cache mints with.
  const leaf_minter& minter() const noexcept { return *minter_; }
  std::size_t size() const;
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  struct shard;

  void emit(leaf_cache_event e) const;

  std::shared_ptr<const leaf_minter> minter_;
  leaf_cache_options options_;
  std::size_t capacity_ = 0;
  std::size_t shard_count_ = 0;
  std::unique_ptr<shard[]> shards_;
  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> mints_{0};
  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> mint_failures_{0};
};

}  // namespace airlock::tls
