// Which allocations TraceReader::for_each_allocation visits (storage/trace_reader.h). Apart from
// the reader so that the source of its allocations (storage/allocation_source.h), which decides
// what a filter keeps, can include it without including the reader.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::storage {

// Which allocations to visit. Unset fields do not filter.
struct AllocationFilter {
  enum class Outcome { kAny, kSucceeded, kFailed };
  enum class Lifetime { kAny, kLiveAtEnd, kFreed };
  std::optional<std::int64_t> upid;
  std::optional<int> kind;
  Outcome outcome = Outcome::kAny;
  // kLiveAtEnd and kFreed imply succeeded allocations; kLiveAtEnd: live at the program's end
  // (TraceReader::live_at_program_end), kFreed: freed at any time.
  Lifetime lifetime = Lifetime::kAny;
  // Only successful allocations live just after this sequence number of their process:
  // alloc_seq <= s and (free_seq NULL or > s).
  std::optional<std::uint64_t> live_just_after;
  // In the table's own order (allocation id) instead of (upid, alloc_seq): one pass over the
  // table, for callers that do not need a process's rows in sequence order.
  bool in_table_order = false;
  // Only the allocations with these ids, looked up by id (a few at a time), in id order
  // whatever in_table_order says: what a caller found it needs in a pass of its own.
  std::optional<std::vector<std::int64_t>> ids;
  // The columns read (AllocationColumns says which); kLiveByStack and kLiveByStackAndSegment
  // only with a filter that visits live allocations alone (lifetime kLiveAtEnd, or
  // live_just_after).
  using Columns = AllocationColumns;
  Columns columns = Columns::kAll;
};

}  // namespace vramtrace::storage
