// The CUPTI backend's correlation ids, per process: which allocation row the API callback of
// each call made or freed, so that the call's activity record (MEMORY2), which CUPTI delivers
// later and in batches, can name that row.
//
// A record is matched by its correlation id first. Which id CUPTI stamps on the memory record
// of a runtime call that the driver carried out (the runtime call's or the driver call's, which
// the backend does not record) is not something a machine without a GPU can tell, so a record
// whose id matches nothing falls back to the latest callback event at its address. An entry is
// forgotten once a record has matched it.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace vramtrace::collector {

class CorrelationIndex {
 public:
  enum class How { kCorrelationId, kAddress };
  struct Match {
    int64_t allocation_id;
    How how;
  };

  // The callback of call `correlation_id` made (or freed) allocation `allocation_id` at
  // `address`. Id 0 is the shim's "no correlation id": nothing is kept for it.
  void on_alloc(uint32_t correlation_id, uint64_t address, int64_t allocation_id) {
    allocs_.add(correlation_id, address, allocation_id);
  }
  void on_free(uint32_t correlation_id, uint64_t address, int64_t allocation_id) {
    frees_.add(correlation_id, address, allocation_id);
  }

  // The callback event an allocation (or release) record stands for, taken out of the index.
  std::optional<Match> take_alloc(uint32_t correlation_id, uint64_t address) {
    return allocs_.take(correlation_id, address);
  }
  std::optional<Match> take_free(uint32_t correlation_id, uint64_t address) {
    return frees_.take(correlation_id, address);
  }

 private:
  struct Entry {
    uint32_t correlation_id;
    uint64_t address;
    int64_t allocation_id;
  };
  class Side {
   public:
    void add(uint32_t correlation_id, uint64_t address, int64_t allocation_id) {
      if (correlation_id == 0) return;
      const Entry entry{correlation_id, address, allocation_id};
      by_correlation_[correlation_id] = entry;
      if (address != 0) by_address_[address] = entry;  // the latest event at the address
    }
    std::optional<Match> take(uint32_t correlation_id, uint64_t address) {
      if (auto it = by_correlation_.find(correlation_id); it != by_correlation_.end()) {
        const Entry entry = it->second;
        by_correlation_.erase(it);
        erase_if_same(by_address_, entry.address, entry);
        return Match{entry.allocation_id, How::kCorrelationId};
      }
      if (auto it = by_address_.find(address); address != 0 && it != by_address_.end()) {
        const Entry entry = it->second;
        by_address_.erase(it);
        erase_if_same(by_correlation_, entry.correlation_id, entry);
        return Match{entry.allocation_id, How::kAddress};
      }
      return std::nullopt;
    }

   private:
    template <class Map, class Key>
    static void erase_if_same(Map& map, Key key, const Entry& entry) {
      auto it = map.find(key);
      if (it != map.end() && it->second.allocation_id == entry.allocation_id &&
          it->second.correlation_id == entry.correlation_id)
        map.erase(it);
    }
    std::unordered_map<uint32_t, Entry> by_correlation_;
    std::unordered_map<uint64_t, Entry> by_address_;
  };
  Side allocs_, frees_;
};

}  // namespace vramtrace::collector
