// The CUPTI backend's correlation ids, per process: which allocation row the API callback of
// each call made or freed, so that the call's activity record (MEMORY2), which CUPTI delivers
// later and in batches, can name that row. An id is forgotten once its record has matched it.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace vramtrace::collector {

class CorrelationIndex {
 public:
  // The callback of call `correlation_id` made (or freed) allocation `allocation_id`. Id 0 is
  // the shim's "no correlation id" and is not kept.
  void on_alloc(uint32_t correlation_id, int64_t allocation_id) {
    if (correlation_id != 0) allocs_[correlation_id] = allocation_id;
  }
  void on_free(uint32_t correlation_id, int64_t allocation_id) {
    if (correlation_id != 0) frees_[correlation_id] = allocation_id;
  }

  // The allocation of the callback with this correlation id, taken out of the index.
  std::optional<int64_t> take_alloc(uint32_t correlation_id) {
    return take(allocs_, correlation_id);
  }
  std::optional<int64_t> take_free(uint32_t correlation_id) { return take(frees_, correlation_id); }

 private:
  using Map = std::unordered_map<uint32_t, int64_t>;
  static std::optional<int64_t> take(Map& map, uint32_t correlation_id) {
    auto it = map.find(correlation_id);
    if (it == map.end()) return std::nullopt;
    const int64_t id = it->second;
    map.erase(it);
    return id;
  }
  Map allocs_, frees_;
};

}  // namespace vramtrace::collector
