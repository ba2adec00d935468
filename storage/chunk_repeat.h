// Repeated bins stored once: the runs of allocation_chunk_repeat (docs/schema.md, "Repeated
// bins"), and the arithmetic that gives back the allocations of each bin a run stands for.
//
// Why: a program in a steady loop (a training step, a loop of temporaries) makes the same
// allocations, from the same stacks, of the same sizes, at the same addresses, again and again;
// packed (storage/allocation_chunk.h), one bin of level 0 of the time index still costs a chunk
// of text as long as the bin is busy, so the trace grows with how long the loop runs. A bin whose
// packed allocations are those of a chunk stored before, but for their numbers, ids and times,
// is an instance of a run: instance k repeats the stored chunk (its source) with its numbers
// `k * seq_step` and its ids `k * id_step` after instance 0's. Times are the one thing a run
// does not keep: instance k starts `k * instance_ns` after instance 0, and within it the
// source's own times after its first allocation are kept, squeezed where the source took longer
// than an instance (repeat_time()). So every report reads a folded bin as the full record, but
// for exact times inside it.
//
// Internal to storage/: the writer makes runs (storage/repeat_folder.h), the readers expand them
// (storage/packed_allocations.h), and the view `allocation` does the same in SQL.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/allocation_chunk.h"

namespace vramtrace::storage {

// One row of allocation_chunk_repeat.
struct ChunkRepeatRun {
  std::int64_t upid = 0;
  // The allocation_chunk row (of the same process) that every instance repeats, by its key.
  std::uint64_t source_first_alloc_seq = 0;
  // The source's first allocation's id and alloc_ns, and the time from that allocation to the
  // source's last event (its latest free): the source's own times are relative to these.
  std::int64_t source_first_id = 0;
  std::int64_t source_first_alloc_ns = 0;
  std::int64_t source_span_ns = 0;
  // Instance 0's first allocation's alloc_seq, id and alloc_ns, and each next instance's steps.
  std::uint64_t first_alloc_seq = 0;
  std::uint64_t seq_step = 0;
  std::int64_t first_id = 0;
  std::int64_t id_step = 0;
  std::int64_t first_alloc_ns = 0;
  std::int64_t instance_ns = 0;
  std::int64_t repeats = 0;  // instances, at least 1
  // Allocations in each instance: the source's first `count` (all of them but where a bin was
  // cut short, as a program's last one).
  std::int64_t count = 0;
  // The last instance's highest free_seq and highest id, for the readers' range queries.
  std::uint64_t last_seq = 0;
  std::int64_t last_id = 0;

  std::uint64_t instance_first_alloc_seq(std::int64_t k) const {
    return first_alloc_seq + static_cast<std::uint64_t>(k) * seq_step;
  }
  std::int64_t instance_first_id(std::int64_t k) const { return first_id + k * id_step; }
  bool operator==(const ChunkRepeatRun&) const = default;
};

// Times inside an instance: `relative_ns` after the source's first allocation becomes that much
// after the instance's start, unless the source took longer than an instance, where it is
// scaled down so that an instance ends before the next begins (times keep rising). Both factors
// stay below 2^31 (the folder makes no run otherwise), so the product fits in 64 bits; the view
// computes the same in SQL. The product is taken wider all the same: a reader meets runs and
// sources that another tool may have changed, whose times must come out wrong, never overflow.
inline std::int64_t repeat_time(const ChunkRepeatRun& run, std::int64_t relative_ns) {
  if (run.source_span_ns <= run.instance_ns) return relative_ns;
  __extension__ using Wide = __int128;
  return static_cast<std::int64_t>(Wide{relative_ns} * run.instance_ns / run.source_span_ns);
}
// The most numbers a run spans, from its first allocation to its last free: a reader finds the
// runs at a number among those that start this far before it at most.
inline constexpr std::uint64_t kRepeatRunSpanNumbers = std::uint64_t{1} << 24;
// The limit on source_span_ns and instance_ns.
inline constexpr std::int64_t kRepeatTimeLimitNs = std::int64_t{1} << 31;

// Appends instance k's allocations to `out`, from the source's (as unpack_allocations() gives
// them: its ids, numbers and times absolute), in the source's order.
void append_repeat_instance(const ChunkRepeatRun& run, std::int64_t k,
                            const std::vector<PackedAllocation>& source,
                            std::vector<PackedAllocation>* out);

}  // namespace vramtrace::storage
