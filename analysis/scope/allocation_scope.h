// Which allocations a report counts, beside which processes (process_filter.h): `--device`,
// `--kind` and `--level`, as every report command takes them.
//
// The level says how a caching allocator's memory is seen. At the block level (the default) a
// block (a tensor, kind `block`) is the unit, and the segments the allocator made are its
// memory, reported apart as cache; at the segment level blocks are not looked at and every
// other allocation, the allocator's segments included, counts. A process without allocator
// events looks the same at both levels.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "storage/trace_reader.h"
#include "storage/trace_rows.h"

namespace vramtrace::analysis {

enum class MemoryLevel { kBlock, kSegment };

// "block", "segment".
std::string_view level_name(MemoryLevel level);

struct AllocationScope {
  std::optional<int> device;  // only allocations on this device ordinal
  std::optional<int> kind;    // only allocations of this kind (storage/schema.h's ids)

  bool empty() const { return !device && !kind; }
  bool matches(int allocation_device, int allocation_kind) const {
    return (!device || *device == allocation_device) && (!kind || *kind == allocation_kind);
  }
  bool matches(const storage::AllocationRow& row) const { return matches(row.device, row.kind); }
};

// The kind the trace names `name` (its allocation_kind table), if any.
std::optional<int> find_kind(const storage::TraceReader& trace, std::string_view name);

}  // namespace vramtrace::analysis
