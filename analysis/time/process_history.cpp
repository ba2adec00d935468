#include "analysis/time/process_history.h"

#include "analysis/time/report_time_index.h"
#include "storage/schema.h"

namespace vramtrace::analysis {

ProcessHistory::ProcessHistory(const storage::TraceReader& trace, Source source) : trace_(trace) {
  if (source == Source::kBest) index_ = open_time_index_if_kept(trace);
}

ProcessHistory::~ProcessHistory() = default;

void ProcessHistory::for_each_event(
    std::int64_t upid, const std::function<void(const storage::AllocationEvent&)>& visit) const {
  if (!index_) {
    trace_.for_each_allocation_event(visit, upid);
    return;
  }
  // Sequence numbers are stored as SQLite integers: INT64_MAX is past the last.
  const auto last = static_cast<std::uint64_t>(INT64_MAX);
  index_->for_each_event_between(upid, 0, last, [&](const storage::AllocationEvent& e) {
    visit(e);
    return true;
  });
}

std::vector<storage::AllocationRecord> ProcessHistory::live_at(std::int64_t upid,
                                                               std::uint64_t seq) const {
  if (index_) return index_->live_at(upid, seq);
  storage::AllocationFilter filter;
  filter.upid = upid;
  filter.live_just_after = seq;
  return trace_.allocations(filter);
}

const std::unordered_set<std::int64_t>& ProcessHistory::allocator_segments() const {
  if (allocator_segments_) return *allocator_segments_;
  if (index_) return allocator_segments_.emplace(index_->allocator_segments());
  allocator_segments_.emplace();
  storage::AllocationFilter blocks;
  blocks.kind = storage::allocation_kind::kBlock;
  trace_.for_each_allocation(blocks, [&](const storage::AllocationRecord& r) {
    if (r.allocation.segment_id) allocator_segments_->insert(*r.allocation.segment_id);
  });
  return *allocator_segments_;
}

bool ProcessHistory::has_allocator_events(std::int64_t upid) const {
  if (!allocator_processes_) {
    if (index_) {
      allocator_processes_.emplace(index_->processes_with_allocator_events());
    } else {
      allocator_processes_.emplace();
      for (const storage::AllocationTotalsRow& row : trace_.allocation_totals())
        if (row.kind == storage::allocation_kind::kBlock) allocator_processes_->insert(row.upid);
    }
  }
  return allocator_processes_->contains(upid);
}

}  // namespace vramtrace::analysis
