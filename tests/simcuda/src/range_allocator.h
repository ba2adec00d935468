// Bookkeeping of which parts of a range of offsets are taken: the allocator behind each device
// heap (arena.h) and behind the address space that cuMemAddressReserve carves
// (virtual_memory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace simcuda {

// Best fit over the free ranges, taking the lowest offset among equal sizes; released ranges
// merge with free neighbours, so fragmentation behaves like a real device heap. Alignment is
// of `origin + offset`, the address the offset stands for, so that callers can ask for
// alignments larger than that of their base address.
//
// Not thread-safe: the driver serialises all calls.
class RangeAllocator {
 public:
  // [begin, end) of a free range, as merged after a release.
  struct Range {
    std::size_t begin;
    std::size_t end;
  };

  // Everything in [0, size) is free.
  RangeAllocator(std::uintptr_t origin, std::size_t size);

  // Offset of `bytes` (> 0) whose address is a multiple of `alignment` (a power of two), or
  // nullopt when no free range can hold them.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment = 1);

  // Takes [offset, offset + bytes) if all of it is free; false otherwise.
  bool allocate_at(std::size_t offset, std::size_t bytes);

  // Returns [offset, offset + bytes), taken before, and gives the free range it now lies in.
  Range release(std::size_t offset, std::size_t bytes);

  std::size_t size() const { return size_; }
  std::size_t used() const { return used_; }
  std::size_t free_range_count() const { return free_by_offset_.size(); }
  std::size_t largest_free_range() const;

 private:
  using FreeByOffset = std::map<std::size_t, std::size_t>;  // offset -> size, address order

  void add_free(std::size_t offset, std::size_t size);
  void remove_free(FreeByOffset::iterator range);
  // Takes [offset, offset + bytes) out of the free range `range`, which contains it.
  void take(FreeByOffset::iterator range, std::size_t offset, std::size_t bytes);

  std::uintptr_t origin_;
  std::size_t size_;
  std::size_t used_ = 0;
  FreeByOffset free_by_offset_;
  std::set<std::pair<std::size_t, std::size_t>> free_by_size_;  // (size, offset), for best fit
};

}  // namespace simcuda
