// The allocation table's columns as the reader reads them: one column list and one decoder,
// shared by TraceReader and TimeIndex so that both give back the same AllocationRecord.
// Internal to storage/.
#pragma once

#include <string_view>

#include "storage/sqlite_statement.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// Unqualified names; prefix them with a table alias where a query joins (see TimeIndex).
inline constexpr std::string_view kAllocationColumns =
    "id, upid, kind, api, device, stream, address, size, requested_size, flags, pool, "
    "result, alloc_seq, alloc_ns, alloc_utid, alloc_callsite_id, free_seq, free_ns, free_utid, "
    "free_callsite_id, free_api, vmm_handle, vmm_offset, segment_id, allocator_allocated, "
    "allocator_reserved, free_allocator_allocated, free_allocator_reserved";

// The same positions with only what the allocator's totals need (AllocationFilter::Columns::
// kAllocatorTotals): id, upid, kind, size, result, alloc_seq, free_seq, segment_id and the
// allocator's reported totals; NULL in the other places, which read_allocation leaves at their
// defaults. SQLite decodes each column it is asked for: on 10 million rows, `summary` took
// 0.8 s less with its pass for the allocator's totals reading these rather than all 28.
inline constexpr std::string_view kAllocatorTotalsColumns =
    "id, upid, kind, NULL, NULL, NULL, NULL, size, NULL, NULL, NULL, "
    "result, alloc_seq, NULL, NULL, NULL, free_seq, NULL, NULL, "
    "NULL, NULL, NULL, NULL, segment_id, allocator_allocated, "
    "allocator_reserved, free_allocator_allocated, free_allocator_reserved";

// AllocationColumns::kLiveByStack and kLiveByStackAndSegment: short lists of their own, with
// their own decoder (for a live set of millions, even the NULLs of a list as long as the others
// cost a second).
inline constexpr std::string_view kLiveByStackColumns =
    "id, upid, kind, device, size, alloc_seq, free_seq, alloc_callsite_id";
inline constexpr std::string_view kLiveByStackAndSegmentColumns =
    "id, upid, kind, device, size, alloc_seq, free_seq, alloc_callsite_id, segment_id";

// The column list of `columns`, for a query's SELECT.
std::string_view allocation_columns(AllocationColumns columns);

// Decodes a row whose columns are kAllocationColumns (or kAllocatorTotalsColumns), in that
// order, from column 0.
AllocationRecord read_allocation(const sqlite::Statement& row);
// Decodes a row whose columns are allocation_columns(columns), in that order, from column
// `first` on.
AllocationRecord read_allocation(const sqlite::Statement& row, AllocationColumns columns,
                                 int first = 0);

// A successful allocation's size from `column` of a row (its id in `id_column`): an integer of
// at most 2^63 - 1 bytes, which every real one is (a failed call's request may be any size_t).
// Another value (text, a real, a negative number: a file written by hand) would be read as a size
// it never had, and sums of it wrap: the trace is refused as damaged instead (TraceError).
std::uint64_t allocation_size(const sqlite::Statement& row, int column, int id_column);

}  // namespace vramtrace::storage
