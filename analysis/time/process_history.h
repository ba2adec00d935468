// What a report reads of one process's history without holding its allocations in memory:
// its allocations and frees in sequence order, streamed; the allocations live just after one of
// its events; and the allocations that held a caching allocator's block.
//
// From the time index where the trace keeps one (analysis/time/report_time_index.h: the (upid, seq)
// indexes and live_span, so a moment's live set costs about its own size to read), from scans of
// the allocation table otherwise (SQLite sorts the events in its temporary files). Memory is the
// live set asked for, not the trace: the advice on a 10-million-allocation trace used to hold
// every row of a process at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

class ProcessHistory {
 public:
  // kBest: the time index when the trace keeps one in its file (open_time_index_if_kept), scans
  // otherwise. kScans: scans whatever the trace keeps (to check one against the other).
  enum class Source { kBest, kScans };
  explicit ProcessHistory(const storage::TraceReader& trace, Source source = Source::kBest);
  ~ProcessHistory();
  ProcessHistory(const ProcessHistory&) = delete;
  ProcessHistory& operator=(const ProcessHistory&) = delete;

  // Successful allocations and their frees, in sequence order (a free before an allocation of
  // the same number).
  void for_each_event(std::int64_t upid,
                      const std::function<void(const storage::AllocationEvent&)>& visit) const;
  // The allocations live just after event `seq`, in (alloc_seq, id) order.
  std::vector<storage::AllocationRecord> live_at(std::int64_t upid, std::uint64_t seq) const;
  // Ids of allocations that held a block at some time (a block's segment_id), of every process.
  const std::unordered_set<std::int64_t>& allocator_segments() const;
  // Whether the process has allocator events: a block, or an allocator out-of-memory report.
  bool has_allocator_events(std::int64_t upid) const;

 private:
  const storage::TraceReader& trace_;
  std::unique_ptr<storage::TimeIndex> index_;  // null: scans
  // Read on first use.
  mutable std::optional<std::unordered_set<std::int64_t>> allocator_segments_;
  mutable std::optional<std::set<std::int64_t>> allocator_processes_;
};

}  // namespace vramtrace::analysis
