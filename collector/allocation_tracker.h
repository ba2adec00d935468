// AllocationTracker: allocations, the frees that end them, and frees that end nothing.
//
// Ring order is sequence order within a process (the shim stamps both under the ring's lock),
// so a free always arrives before any allocation that reuses its address. A free that matches
// nothing live is a bad_free row. A free whose call then failed (FreeFailed, which follows it
// closely) is undone: what it ended is live again, and a bad_free row says why.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "collector/correlation_index.h"
#include "collector/ingest_stats.h"
#include "collector/live_allocations.h"
#include "collector/live_query.h"
#include "shm_ring.h"
#include "vramtrace.pb.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class AllocationTracker {
 public:
  // Frees kept for a possible FreeFailed. The shim sends FreeFailed right after the real free
  // returns, so only the records that other threads wrote in between can separate the two.
  static constexpr size_t kRecentFreesKept = 4096;

  // A free recently seen, kept until a FreeFailed could no longer refer to it.
  struct RecentFree {
    uint64_t seq;
    uint64_t address;
    // What it ended (more than one for a cuMemUnmap of several mappings); empty: nothing live
    // was at the address, and a bad_free row says so.
    LiveAllocations::Ended ended;
    int64_t ns, utid;
    int api;
    std::optional<int64_t> callsite_id;
    std::optional<int64_t> bad_free_id;  // the bad_free row an unknown address made
  };

  // One process's allocations, dropped with its ring.
  struct ProcessAllocations {
    LiveAllocations live;
    // The last kRecentFreesKept frees, oldest overwritten first (their `ended` vectors are
    // reused: no allocation per free). recent_free_next: the slot the next free takes.
    std::vector<RecentFree> recent_frees;
    size_t recent_free_next = 0;
    // The CUPTI backend: API callbacks' allocations by correlation id, for activity records.
    CorrelationIndex correlations;
    // What live queries follow (live_query.h).
    LiveQueries queries;
  };

  // Who made an event: its process, its thread, and its stack's callsite.
  struct Origin {
    int64_t upid;
    int64_t utid;
    std::optional<int64_t> callsite;
  };

  AllocationTracker(storage::TraceWriter& writer, IngestStats& stats);

  void on_alloc(ProcessAllocations& p, const ring::RecordHeader& h, const wire::Alloc& m,
                const Origin& origin);
  void on_free(ProcessAllocations& p, const ring::RecordHeader& h, const wire::Free& m,
               const Origin& origin);
  // `stack`: the failed call's callsite, asked for only when its free came without a stack.
  void on_free_failed(ProcessAllocations& p, int64_t upid, const wire::FreeFailed& m,
                      const std::function<std::optional<int64_t>()>& stack);

  // Allocation rows written so far.
  int64_t allocations() const { return next_allocation_id_ - 1; }

 private:
  // Writes the bad_free row of the free `f` of process `upid`; returns its id.
  int64_t add_bad_free(int64_t upid, const RecentFree& f, std::string_view reason, int result);

  storage::TraceWriter& writer_;
  IngestStats& stats_;
  int64_t next_allocation_id_ = 1;
  int64_t next_bad_free_id_ = 1;
};

}  // namespace vramtrace::collector
