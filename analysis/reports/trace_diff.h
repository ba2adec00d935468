// Two traces side by side: per callsite, how its peak and its leaked bytes changed from trace
// A (before) to trace B (after). What a CI job asks of a change: which line now holds more.
//
// Callsites are matched by what their stacks say, not by ids (each trace interns its own): a
// frame is its function, file and line, or, unsymbolized, its module's file name and offset.
// A group is one (stack, kind), as in the leak report, and counts at the report's level
// (allocation_scope.h): at the block level blocks count and the allocator's segments do not.
//
// - peak: the most bytes the group's allocations held at once within one process, swept in
//   the process's own sequence order; with several processes, their peaks added up.
// - leaked: the bytes of its allocations never freed.
// Both are sizes reserved (allocation.size). Failed allocations count in neither.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct CallsiteChange {
  std::string kind_name;
  std::vector<storage::StackFrame> stack;  // innermost first; B's where B has the group
  std::uint64_t peak_a = 0, peak_b = 0;
  std::uint64_t leaked_a = 0, leaked_b = 0;

  std::int64_t peak_change() const;
  std::int64_t leaked_change() const;
  // Regressions first: the larger peak_change() + leaked_change(), the earlier.
  std::int64_t score() const { return peak_change() + leaked_change(); }
};

struct TraceDiff {
  std::string level;                     // "block" or "segment", the same for both traces
  std::uint64_t peak_a = 0, peak_b = 0;  // the groups' peaks added up
  std::uint64_t leaked_a = 0, leaked_b = 0;
  // Groups whose peak or leaked bytes changed: by score() descending, then peak_change()
  // descending, then kind and stack text ascending, so that equal changes keep one order.
  std::vector<CallsiteChange> changes;
  std::uint64_t unchanged = 0;  // groups in both traces with the same numbers
};

struct TraceDiffOptions {
  ProcessSelection processes_a, processes_b;
  AllocationScope allocations;
  MemoryLevel level = MemoryLevel::kBlock;
};

TraceDiff diff_traces(const storage::TraceReader& a, const storage::TraceReader& b,
                      const TraceDiffOptions& options = {});

}  // namespace vramtrace::analysis
