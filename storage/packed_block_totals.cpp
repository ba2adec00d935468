#include "storage/packed_block_totals.h"

#include "storage/live_span.h"
#include "storage/packed_allocations.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

using sqlite::Statement;

void packed_allocator_totals_at(ReaderConnection& trace, std::int64_t upid, std::uint64_t seq,
                                std::optional<std::uint64_t>* latest,
                                TraceReader::AllocatorTotalsAt* totals) {
  PackedAllocations& packed = trace.packed();
  if (!packed.present()) return;
  Statement blocks = trace.prepare(
      "SELECT count(*) FROM (SELECT 1 FROM allocation_site AS s JOIN thread AS t ON t.utid = "
      "s.utid WHERE s.kind = ?1 AND t.upid = ?2 LIMIT 1)");
  blocks.bind_int64(1, allocation_kind::kBlock);
  blocks.bind_int64(2, upid);
  std::int64_t made_blocks = 0;
  trace.each_row(blocks, [&](const Statement& row) { made_blocks = row.int64(0); });
  if (made_blocks == 0) return;
  std::uint64_t limit = seq;
  while (const std::optional<std::uint64_t> start = packed.last_chunk_start(upid, limit)) {
    const std::uint64_t bin_first = level_0_bin_first(*start);
    // Events of this bin's allocations lie before its end and a short life after it.
    if (*latest &&
        **latest > level_0_bin_last(*start) + static_cast<std::uint64_t>(kShortLifeEvents))
      return;
    bool found = false;
    const auto take = [&](std::uint64_t at, std::optional<std::uint64_t> allocated,
                          std::optional<std::uint64_t> reserved) {
      if (at > seq || (!allocated && !reserved)) return;
      found = true;
      if (*latest && at < **latest) return;
      *latest = at;
      *totals = {allocated, reserved};
    };
    for (const PackedAllocation& a :
         packed.between(upid, level_0_bin_first(bin_first > 0 ? bin_first - 1 : 0), seq)) {
      take(a.alloc_seq, a.allocator_allocated, a.allocator_reserved);
      take(a.free_seq(), a.free_allocator_allocated, a.free_allocator_reserved);
    }
    if (found || bin_first == 0) return;
    limit = bin_first - 1;
  }
}

}  // namespace vramtrace::storage
