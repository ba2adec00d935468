// The CUPTI backend's correlation ids, per process: which allocation row the API callback of
// each call made or freed, so that the call's activity record (MEMORY2), which CUPTI delivers
// later and in batches, can name that row.
//
// A record is matched by its correlation id first. Which id CUPTI stamps on the memory record
// of a runtime call that the driver carried out (the runtime call's or the driver call's, which
// the backend does not record) is not something a machine without a GPU can tell, so a record
// whose id matches nothing falls back to the latest callback event at its address. One call can
// end several allocations (cuMemUnmap of a range over several mappings): CUPTI then sends a
// record for each, all with the call's id, and each names the entry at its own address. An
// entry is forgotten once a record has matched it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

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
      by_correlation_[correlation_id].push_back(entry);
      if (address != 0) by_address_[address] = entry;  // the latest event at the address
    }
    std::optional<Match> take(uint32_t correlation_id, uint64_t address) {
      if (auto it = by_correlation_.find(correlation_id); it != by_correlation_.end()) {
        // The call's entry at the record's address; else its first (the address differs when
        // the record is the driver's view of a runtime call).
        std::vector<Entry>& entries = it->second;
        auto chosen = std::find_if(entries.begin(), entries.end(),
                                   [address](const Entry& e) { return e.address == address; });
        if (chosen == entries.end()) chosen = entries.begin();
        const Entry entry = *chosen;
        entries.erase(chosen);
        if (entries.empty()) by_correlation_.erase(it);
        if (auto at = by_address_.find(entry.address);
            at != by_address_.end() && same(at->second, entry))
          by_address_.erase(at);
        return Match{entry.allocation_id, How::kCorrelationId};
      }
      if (auto it = by_address_.find(address); address != 0 && it != by_address_.end()) {
        const Entry entry = it->second;
        by_address_.erase(it);
        if (auto list = by_correlation_.find(entry.correlation_id); list != by_correlation_.end()) {
          std::erase_if(list->second, [&entry](const Entry& e) { return same(e, entry); });
          if (list->second.empty()) by_correlation_.erase(list);
        }
        return Match{entry.allocation_id, How::kAddress};
      }
      return std::nullopt;
    }

   private:
    static bool same(const Entry& a, const Entry& b) {
      return a.allocation_id == b.allocation_id && a.correlation_id == b.correlation_id;
    }
    std::unordered_map<uint32_t, std::vector<Entry>> by_correlation_;
    std::unordered_map<uint64_t, Entry> by_address_;
  };
  Side allocs_, frees_;
};

}  // namespace vramtrace::collector
