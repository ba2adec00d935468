#include "analysis/allocator/allocator_level.h"

#include <vector>

#include "storage/schema.h"

namespace vramtrace::analysis {

bool AllocatorView::has_allocator_events(std::int64_t upid) const {
  auto it = processes.find(upid);
  return it != processes.end() && it->second.allocator_events;
}

AllocatorView build_allocator_view(const storage::TraceReader& trace,
                                   const ProcessSelection& selected) {
  AllocatorView view;
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(selected, process.start.upid)) continue;
    AllocatorTotals& totals = view.processes[process.start.upid];
    totals.upid = process.start.upid;
    totals.pid = process.start.pid;
  }
  // The allocator's latest totals per process, by sequence number.
  std::map<std::int64_t, std::uint64_t> latest_seq;
  const auto note_totals = [&](AllocatorTotals& totals, std::uint64_t seq,
                               const std::optional<std::uint64_t>& allocated,
                               const std::optional<std::uint64_t>& reserved) {
    if (!allocated && !reserved) return;
    auto [it, inserted] = latest_seq.try_emplace(totals.upid, seq);
    if (!inserted && it->second > seq) return;
    it->second = seq;
    totals.allocator_allocated = allocated;
    totals.allocator_reserved = reserved;
  };

  // Every total below is the same in any order (the latest report is chosen by its seq): one
  // pass over the table, not through the (upid, alloc_seq) index.
  storage::AllocationFilter every;
  every.in_table_order = true;
  every.columns = storage::AllocationFilter::Columns::kAllocatorTotals;
  trace.for_each_allocation(every, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& a = record.allocation;
    auto process = view.processes.find(a.upid);
    if (process == view.processes.end()) return;
    AllocatorTotals& totals = process->second;
    if (a.kind != storage::allocation_kind::kBlock) return;  // segments: below
    totals.allocator_events = true;
    note_totals(totals, a.alloc_seq, a.allocator_allocated, a.allocator_reserved);
    if (record.failed()) {
      totals.out_of_memory += 1;
      return;
    }
    totals.blocks += 1;
    if (a.segment_id)
      view.allocator_segments.insert(*a.segment_id);
    else
      totals.blocks_without_segment += 1;
    if (record.free) {
      note_totals(totals, record.free->free_seq, record.free->allocator_allocated,
                  record.free->allocator_reserved);
    }
    if (!trace.live_at_program_end(record)) return;
    totals.live_block_count += 1;
    totals.live_block_bytes += a.size;
    if (a.segment_id) view.live_block_bytes_in[*a.segment_id] += a.size;
  });

  // The segments that held a block, read once that pass has found them all (a program's other
  // allocations, live or not, can be millions: none is kept).
  storage::AllocationFilter segments;
  segments.ids.emplace(view.allocator_segments.begin(), view.allocator_segments.end());
  segments.columns = storage::AllocationFilter::Columns::kAllocatorTotals;
  trace.for_each_allocation(segments, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& segment = record.allocation;
    if (segment.kind == storage::allocation_kind::kBlock || !trace.live_at_program_end(record))
      return;
    const auto process = view.processes.find(segment.upid);
    if (process == view.processes.end()) return;
    AllocatorTotals& totals = process->second;
    totals.segment_count += 1;
    totals.segment_bytes += segment.size;
    const auto in_use = view.live_block_bytes_in.find(segment.id);
    const std::uint64_t used = in_use == view.live_block_bytes_in.end() ? 0 : in_use->second;
    totals.cached_bytes += segment.size > used ? segment.size - used : 0;
  });
  return view;
}

}  // namespace vramtrace::analysis
