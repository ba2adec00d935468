#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <iterator>
#include <limits>

namespace simcuda {
namespace {

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

std::optional<std::size_t> Arena::round_up(std::size_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max() - (kAlignment - 1)) return std::nullopt;
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

Arena::Arena(std::size_t capacity) {
  assert(capacity > 0 && capacity % kAlignment == 0);
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return;
  base_ = static_cast<std::byte*>(base);
  capacity_ = capacity;
  add_free(0, capacity);
}

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, capacity_);
}

std::byte* Arena::allocate(std::size_t bytes) {
  assert(bytes > 0 && bytes % kAlignment == 0);
  const auto best = free_by_size_.lower_bound({bytes, 0});
  if (best == free_by_size_.end()) return nullptr;
  const auto [size, offset] = *best;
  remove_free(free_by_offset_.find(offset));
  if (size > bytes) add_free(offset + bytes, size - bytes);
  used_ += bytes;
  return base_ + offset;
}

void Arena::release(std::byte* start, std::size_t bytes) {
  assert(contains(start) && bytes % kAlignment == 0 && bytes <= used_);
  const auto offset = static_cast<std::size_t>(start - base_);
  std::size_t free_begin = offset;
  std::size_t free_end = offset + bytes;

  // Merge with the free range that ends where this one starts, and the one that starts where
  // this one ends.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= offset);  // no overlap: a double release is a bug
    if (prev->first + prev->second == offset) {
      free_begin = prev->first;
      remove_free(prev);
    }
  }
  if (next != free_by_offset_.end()) {
    assert(free_end <= next->first);
    if (next->first == free_end) {
      free_end += next->second;
      remove_free(next);
    }
  }
  add_free(free_begin, free_end - free_begin);
  used_ -= bytes;
  discard_pages(free_begin, free_end, offset, offset + bytes);
}

bool Arena::contains(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto base = reinterpret_cast<std::uintptr_t>(base_);
  return base_ != nullptr && address >= base && address - base < capacity_;
}

std::size_t Arena::largest_free_range() const {
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
}

void Arena::add_free(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Arena::remove_free(FreeByOffset::iterator range) {
  free_by_size_.erase({range->second, range->first});
  free_by_offset_.erase(range);
}

void Arena::discard_pages(std::size_t free_begin, std::size_t free_end, std::size_t begin,
                          std::size_t end) const {
  // The arena base is page aligned, so offsets can be rounded as addresses would be. Only whole
  // pages inside the free range may go: a partial page still holds a live neighbour's bytes.
  const std::size_t page = page_size();
  const std::size_t first = std::max((begin / page) * page, (free_begin + page - 1) / page * page);
  const std::size_t last = std::min((end + page - 1) / page * page, free_end / page * page);
  if (first < last) madvise(base_ + first, last - first, MADV_DONTNEED);
}

}  // namespace simcuda
