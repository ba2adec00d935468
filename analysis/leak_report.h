// Leaks: allocations that succeeded and were never freed, grouped by where they were made.
//
// A group is one (allocation stack, kind): its allocations' bytes and count, and the stack
// resolved innermost frame first. Failed allocations are never leaks. Each kind leaks apart,
// the virtual memory API's three included: a reservation, a handle and a mapping left live are
// three leaks (of address space, of physical memory, of a mapping), even from one stack.
//
// Two levels (allocator_level.h). At the block level, a live block of a caching allocator (a
// tensor still alive) is a leak, and a live segment that the allocator made (one that held a
// block) is not: its bytes are the allocator's, reported apart as `cached` (the segment bytes
// not in a live block; a live block's bytes count as its leak). Allocations outside the
// allocator leak as at the segment level. At the segment level, blocks are not looked at and
// every live allocation of another kind is a leak. The default is the block level, which in a
// process without allocator events is the segment level.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/allocation_scope.h"
#include "analysis/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct LeakGroup {
  std::optional<std::int64_t> callsite_id;  // empty: allocated with no stack recorded
  int kind = 0;
  std::string kind_name;
  std::string level;        // "block" for kind block, "segment" for every other kind
  std::uint64_t bytes = 0;  // sum of size (bytes reserved, not requested)
  std::uint64_t count = 0;
  std::vector<storage::StackFrame> stack;  // innermost first
};

using LeakLevel = MemoryLevel;  // allocation_scope.h

struct CacheTotals {
  std::uint64_t bytes = 0;  // live allocator segments' bytes not in a live block
  std::uint64_t count = 0;  // live allocator segments
};

struct LeakReport {
  bool trace_complete = true;
  // "block" when the block level was asked for, or by default where a selected process had
  // allocator events; "segment" otherwise.
  std::string level;
  bool allocator_events = false;      // a selected process had allocator events
  CacheTotals cached;                 // block level only
  std::vector<std::string> warnings;  // see trace_warnings()
  std::uint64_t total_bytes = 0;
  std::uint64_t total_count = 0;
  // Largest first: bytes, then count, both descending; then callsite id (no stack last) and
  // kind, ascending, so that equal groups always come out in the same order.
  std::vector<LeakGroup> groups;
};

struct LeakReportOptions {
  std::optional<std::int64_t> upid;  // only this process's leaks
  ProcessSelection processes;        // only these processes' leaks (and warnings)
  std::optional<LeakLevel> level;    // unset: the block level (see above)
  AllocationScope allocations;       // only leaks of these allocations (device, kind)
};

LeakReport build_leak_report(const storage::TraceReader& trace,
                             const LeakReportOptions& options = {});

}  // namespace vramtrace::analysis
