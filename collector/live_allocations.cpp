#include "collector/live_allocations.h"

#include "vramtrace.pb.h"

namespace vramtrace::collector {

LiveAllocations::Space LiveAllocations::space_of_kind(int kind) {
  switch (kind) {
    case wire::KIND_VMM_HANDLE:
      return kHandles;
    case wire::KIND_VMM_RESERVATION:
      return kReservations;
    case wire::KIND_BLOCK:
      return kBlocks;
    default:
      return kPointers;
  }
}

std::optional<LiveAllocations::Space> LiveAllocations::space_of_free(int api) {
  switch (api) {
    case wire::API_CU_MEM_RELEASE:
      return kHandles;
    case wire::API_CU_MEM_ADDRESS_FREE:
      return kReservations;
    case wire::API_CU_MEM_UNMAP:
      return std::nullopt;
    case wire::API_C10_REPORT_MEMORY_USAGE:
      return kBlocks;
    default:
      return kPointers;
  }
}

bool LiveAllocations::is_segment_kind(int kind) {
  return kind == wire::KIND_DEVICE || kind == wire::KIND_MANAGED || kind == wire::KIND_ASYNC;
}

std::optional<LiveAllocations::Entry> LiveAllocations::add(uint64_t address, Entry entry) {
  if (entry.kind == wire::KIND_VMM_MAPPING) {
    auto [it, inserted] = mappings_.try_emplace(address, entry);
    if (inserted) return std::nullopt;
    Entry displaced = it->second;
    it->second = entry;
    return displaced;
  }
  Entry replaced;
  std::optional<Entry> displaced;
  if (!by_address_[space_of_kind(entry.kind)].insert_or_replace(address, entry, &replaced)) {
    displaced = replaced;
    if (segments_indexed_ && is_segment_kind(replaced.kind)) segments_.erase(address);
  }
  if (segments_indexed_ && is_segment_kind(entry.kind)) segments_[address] = entry;
  return displaced;
}

void LiveAllocations::remove_for_free(int api, uint64_t address, uint64_t size, Ended* ended) {
  const std::optional<Space> space = space_of_free(api);
  if (!space) {
    // A zero size would be refused by the driver; treat it as the one mapping at `address`.
    const uint64_t end = size == 0 || address + size < address ? address + 1 : address + size;
    auto it = mappings_.lower_bound(address);
    while (it != mappings_.end() && it->first < end) {
      ended->emplace_back(it->first, it->second);
      it = mappings_.erase(it);
    }
    return;
  }
  Entry removed;
  if (by_address_[*space].erase(address, &removed)) {
    ended->emplace_back(address, removed);
    if (segments_indexed_ && is_segment_kind(removed.kind)) segments_.erase(address);
  }
}

void LiveAllocations::restore(uint64_t address, Entry entry) {
  add(address, entry);
}

void LiveAllocations::clear() {
  for (auto& space : by_address_) space.clear();
  mappings_.clear();
  segments_.clear();
  segments_indexed_ = false;
}

std::optional<LiveAllocations::Entry> LiveAllocations::containing(
    const std::map<uint64_t, Entry>& by_start, uint64_t address) {
  auto it = by_start.upper_bound(address);
  if (it == by_start.begin()) return std::nullopt;
  --it;
  const uint64_t offset = address - it->first;
  if (offset >= it->second.size) return std::nullopt;
  return it->second;
}

std::optional<LiveAllocations::Entry> LiveAllocations::segment_containing(uint64_t address,
                                                                          uint64_t size) {
  if (!segments_indexed_) {
    by_address_[kPointers].for_each([&](uint64_t start, const Entry& entry) {
      if (is_segment_kind(entry.kind)) segments_.emplace(start, entry);
    });
    segments_indexed_ = true;
  }
  if (auto segment = containing(segments_, address)) {
    // Live allocations do not overlap, so the one holding the start is the only candidate.
    auto start = segments_.upper_bound(address);
    --start;
    const uint64_t offset = address - start->first;
    if (size <= segment->size - offset) return segment;
    return std::nullopt;
  }
  return containing(mappings_, address);
}

}  // namespace vramtrace::collector
