#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
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

Arena::Arena(std::size_t capacity) : ranges_(0, 0) {
  assert(capacity > 0 && capacity % kAlignment == 0);
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return;
  base_ = static_cast<std::byte*>(base);
  capacity_ = capacity;
  ranges_ = RangeAllocator(reinterpret_cast<std::uintptr_t>(base_), capacity);
}

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, capacity_);
}

std::byte* Arena::allocate(std::size_t bytes) {
  assert(bytes > 0 && bytes % kAlignment == 0);
  // Every size is a multiple of kAlignment, and so is every free range's offset.
  const std::optional<std::size_t> offset = ranges_.allocate(bytes);
  return offset ? base_ + *offset : nullptr;
}

void Arena::release(std::byte* start, std::size_t bytes) {
  assert(contains(start) && bytes % kAlignment == 0);
  const auto offset = static_cast<std::size_t>(start - base_);
  const RangeAllocator::Range free = ranges_.release(offset, bytes);
  discard_pages(free.begin, free.end, offset, offset + bytes);
}

bool Arena::contains(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto base = reinterpret_cast<std::uintptr_t>(base_);
  return base_ != nullptr && address >= base && address - base < capacity_;
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
