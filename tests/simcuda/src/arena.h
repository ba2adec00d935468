// One simulated GPU's memory: a reserved range of address space and the allocator that carves
// it up.
#pragma once

#include <cstddef>
#include <optional>

#include "range_allocator.h"

namespace simcuda {

// The range is reserved with mmap(MAP_NORESERVE), so its size is only a capacity: pages cost
// memory once touched, and are handed back to the kernel (madvise(MADV_DONTNEED)) once free.
// Allocation is best fit (range_allocator.h), so fragmentation behaves like a real device heap.
//
// Not thread-safe: the driver serialises all calls.
class Arena {
 public:
  // Every allocation starts at, and is sized in, multiples of this.
  static constexpr std::size_t kAlignment = 512;

  // `bytes` rounded up to kAlignment; nullopt when that overflows.
  static std::optional<std::size_t> round_up(std::size_t bytes);

  // Reserves `capacity` bytes, a positive multiple of kAlignment. Check reserved() after.
  explicit Arena(std::size_t capacity);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool reserved() const { return base_ != nullptr; }

  // Start of a free range of `bytes` (a positive multiple of kAlignment), or nullptr when no
  // free range is that large.
  std::byte* allocate(std::size_t bytes);

  // Returns [start, start + bytes), obtained from allocate(), to the free ranges.
  void release(std::byte* start, std::size_t bytes);

  bool contains(const void* p) const;
  std::size_t capacity() const { return capacity_; }
  std::size_t used() const { return ranges_.used(); }
  std::size_t free_range_count() const { return ranges_.free_range_count(); }
  std::size_t largest_free_range() const { return ranges_.largest_free_range(); }

 private:
  // Gives back to the kernel the whole pages of the free range [free_begin, free_end) that
  // overlap the just-freed [begin, end). Pages of the free range outside [begin, end) were
  // already given back when they became free.
  void discard_pages(std::size_t free_begin, std::size_t free_end, std::size_t begin,
                     std::size_t end) const;

  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  RangeAllocator ranges_;
};

}  // namespace simcuda
