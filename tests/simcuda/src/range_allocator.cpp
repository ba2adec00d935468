#include "range_allocator.h"

#include <cassert>
#include <iterator>

namespace simcuda {

RangeAllocator::RangeAllocator(std::uintptr_t origin, std::size_t size)
    : origin_(origin), size_(size) {
  if (size > 0) add_free(0, size);
}

std::optional<std::size_t> RangeAllocator::allocate(std::size_t bytes, std::size_t alignment) {
  assert(bytes > 0 && alignment > 0 && (alignment & (alignment - 1)) == 0);
  // By size, then offset: the first range that can hold the request once aligned is the best
  // fit. Without alignment padding that is the first one looked at.
  for (auto candidate = free_by_size_.lower_bound({bytes, 0}); candidate != free_by_size_.end();
       ++candidate) {
    const auto [size, offset] = *candidate;
    const std::uintptr_t address = origin_ + offset;
    const std::size_t padding = (alignment - address % alignment) % alignment;
    if (padding > size || size - padding < bytes) continue;
    take(free_by_offset_.find(offset), offset + padding, bytes);
    return offset + padding;
  }
  return std::nullopt;
}

bool RangeAllocator::allocate_at(std::size_t offset, std::size_t bytes) {
  assert(bytes > 0);
  if (offset >= size_ || bytes > size_ - offset) return false;
  auto after = free_by_offset_.upper_bound(offset);
  if (after == free_by_offset_.begin()) return false;
  const auto range = std::prev(after);
  if (range->first + range->second < offset + bytes) return false;
  take(range, offset, bytes);
  return true;
}

RangeAllocator::Range RangeAllocator::release(std::size_t offset, std::size_t bytes) {
  assert(bytes <= used_ && offset + bytes <= size_);
  Range merged{offset, offset + bytes};
  // Merge with the free range that ends where this one starts, and the one that starts where
  // this one ends.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= offset);  // no overlap: a double release is a bug
    if (prev->first + prev->second == offset) {
      merged.begin = prev->first;
      remove_free(prev);
    }
  }
  if (next != free_by_offset_.end()) {
    assert(merged.end <= next->first);
    if (next->first == merged.end) {
      merged.end += next->second;
      remove_free(next);
    }
  }
  add_free(merged.begin, merged.end - merged.begin);
  used_ -= bytes;
  return merged;
}

std::size_t RangeAllocator::largest_free_range() const {
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
}

void RangeAllocator::add_free(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void RangeAllocator::remove_free(FreeByOffset::iterator range) {
  free_by_size_.erase({range->second, range->first});
  free_by_offset_.erase(range);
}

void RangeAllocator::take(FreeByOffset::iterator range, std::size_t offset, std::size_t bytes) {
  const auto [begin, size] = *range;
  remove_free(range);
  if (offset > begin) add_free(begin, offset - begin);
  if (begin + size > offset + bytes) add_free(offset + bytes, begin + size - (offset + bytes));
  used_ += bytes;
}

}  // namespace simcuda
