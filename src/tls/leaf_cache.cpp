#include "tls/leaf_cache.hpp"

#include "core/str_cat.hpp"

#include <algorithm>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace airlock::tls {
namespace {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

}  // namespace

struct leaf_cache::shard {
  struct entry {
    std::string key;
    std::shared_ptr<const leaf_certificate> leaf;
  };

  std::mutex mutex;
  std::size_t capacity = 0;
  std::list<entry> lru;  // most recently used first
  std::unordered_map<std::string, std::list<entry>::iterator, string_hash, std::equal_to<>> index;
};

leaf_cache::leaf_cache(std::shared_ptr<const leaf_minter> minter, leaf_cache_options options)
    : minter_(std::move(minter)), options_(std::move(options)) {
  capacity_ = options_.capacity == 0 ? 1 : options_.capacity;
  shard_count_ = std::clamp<std::size_t>(options_.shards, 1, capacity_);
  shards_ = std::make_unique<shard[]>(shard_count_);
  // Spread the capacity exactly: the first (capacity % shards) shards take one more.
  for (std::size_t i = 0; i < shard_count_; ++i) {
    shards_[i].capacity = capacity_ / shard_count_ + (i < capacity_ % shard_count_ ? 1 : 0);
    shards_[i].index.reserve(shards_[i].capacity);
  }
  if (!options_.clock) options_.clock = [] { return std::chrono::system_clock::now(); };
}

leaf_cache::~leaf_cache() = default;

void leaf_cache::emit(leaf_cache_event e) const {
  if (options_.on_event) options_.on_event(e);
}

std::shared_ptr<const leaf_certificate> leaf_cache::get(std::string_view host, std::string& error) {
  return get(host, {}, error);
}

std::shared_ptr<const leaf_certificate> leaf_cache::get(std::string_view host,
                                                        std::span<const leaf_name> also,
                                                        std::string& error) {
  auto name = parse_leaf_name(host);
  if (!name) {
    mint_failures_.fetch_add(1, std::memory_order_relaxed);
    emit(leaf_cache_event::mint_failed);
    error = "not a host name or IP literal a certificate can name";
    return nullptr;
  }
  // The key: the name, then each further name (a newline cannot occur in a name).
  std::string key = name->text;
  for (const auto& n : also)
    key += core::str_cat('\n', n.is_ip ? "ip:" : "dns:", n.text);
  const auto now = options_.clock();
  // Mix the hash before picking a shard so that the keys of one shard do not all share a
  // residue, which the shard's own hash table would then see.
  const std::size_t h = string_hash{}(key)*0x9E3779B97F4A7C15ull;
  shard& s = shards_[(h >> 32) % shard_count_];
  // Events are collected under the lock and reported after it is released.
  leaf_cache_event events[3];
  std::size_t event_count = 0;
  std::shared_ptr<const leaf_certificate> result;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.index.find(key);
    if (it != s.index.end()) {
      const auto& cached = it->second->leaf;
      // A leaf that already lasts as long as the CA cannot be renewed into a longer one; it is
      // served until it expires rather than re-minted on every lookup.
      const bool renewable = cached->not_after() < minter_->ca().not_after();
      if (cached->not_after() - now > options_.renew_before ||
          (!renewable && cached->not_after() > now)) {
        s.lru.splice(s.lru.begin(), s.lru, it->second);
        hits_.fetch_add(1, std::memory_order_relaxed);
        result = cached;
        events[event_count++] = leaf_cache_event::hit;
      } else if (auto fresh = minter_->mint(*name, also, error, now)) {
        it->second->leaf = fresh;
        s.lru.splice(s.lru.begin(), s.lru, it->second);
        mints_.fetch_add(1, std::memory_order_relaxed);
        renewals_.fetch_add(1, std::memory_order_relaxed);
        result = std::move(fresh);
        events[event_count++] = leaf_cache_event::mint;
        events[event_count++] = leaf_cache_event::renewal;
      } else {
        mint_failures_.fetch_add(1, std::memory_order_relaxed);
        events[event_count++] = leaf_cache_event::mint_failed;
        // Better an old leaf that is still valid than no interception at all.
        if (cached->not_after() > now) result = cached;
      }
    } else if (auto fresh = minter_->mint(*name, also, error, now)) {
      if (s.lru.size() >= s.capacity) {
        s.index.erase(s.lru.back().key);
        s.lru.pop_back();
        evictions_.fetch_add(1, std::memory_order_relaxed);
        events[event_count++] = leaf_cache_event::eviction;
      }
      s.lru.push_front(shard::entry{key, fresh});
      s.index.emplace(std::move(key), s.lru.begin());
      mints_.fetch_add(1, std::memory_order_relaxed);
      result = std::move(fresh);
      events[event_count++] = leaf_cache_event::mint;
    } else {
      mint_failures_.fetch_add(1, std::memory_order_relaxed);
      events[event_count++] = leaf_cache_event::mint_failed;
    }
  }
  for (std::size_t i = 0; i < event_count; ++i)
    emit(events[i]);
  return result;
}

leaf_cache_stats leaf_cache::stats() const noexcept {
  leaf_cache_stats st;
  st.hits = hits_.load(std::memory_order_relaxed);
  st.mints = mints_.load(std::memory_order_relaxed);
  st.renewals = renewals_.load(std::memory_order_relaxed);
  st.evictions = evictions_.load(std::memory_order_relaxed);
  st.mint_failures = mint_failures_.load(std::memory_order_relaxed);
  return st;
}

std::size_t leaf_cache::size() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    n += shards_[i].lru.size();
  }
  return n;
}

}  // namespace airlock::tls
