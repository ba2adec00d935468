#include "storage/chunk_repeat.h"

#include <algorithm>

namespace vramtrace::storage {
namespace {

// Sums, differences and products as the int64 with the same bits, as the chunks' text is read
// (storage/allocation_chunk.cpp): a run or a source that another tool changed gives wrong
// numbers, which the readers refuse or show, never an overflow.
std::int64_t plus(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t minus(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t times(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

}  // namespace

void append_repeat_instance(const ChunkRepeatRun& run, std::int64_t k,
                            const std::vector<PackedAllocation>& source,
                            std::vector<PackedAllocation>* out) {
  const std::uint64_t first_seq = run.instance_first_alloc_seq(k);
  const std::int64_t first_id = plus(run.first_id, times(k, run.id_step));
  const std::int64_t start_ns = plus(run.first_alloc_ns, times(k, run.instance_ns));
  // The source's first `count`: a bin cut short repeats the start of one.
  const std::size_t count =
      std::min(source.size(), static_cast<std::size_t>(std::max<std::int64_t>(run.count, 0)));
  for (std::size_t i = 0; i < count; ++i) {
    const PackedAllocation& from = source[i];
    PackedAllocation& a = out->emplace_back(from);
    a.id = plus(first_id, minus(from.id, run.source_first_id));
    a.alloc_seq = first_seq + (from.alloc_seq - run.source_first_alloc_seq);
    const std::int64_t relative_alloc_ns = minus(from.alloc_ns, run.source_first_alloc_ns);
    a.alloc_ns = plus(start_ns, repeat_time(run, relative_alloc_ns));
    a.free_ns_delta = minus(
        plus(start_ns, repeat_time(run, plus(relative_alloc_ns, from.free_ns_delta))), a.alloc_ns);
  }
}

}  // namespace vramtrace::storage
