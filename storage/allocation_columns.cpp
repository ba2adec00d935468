#include "storage/allocation_columns.h"

#include "storage/trace_error.h"

namespace vramtrace::storage {

std::string_view allocation_columns(AllocationColumns columns) {
  switch (columns) {
    case AllocationColumns::kAll:
      break;
    case AllocationColumns::kAllocatorTotals:
      return kAllocatorTotalsColumns;
    case AllocationColumns::kLiveByStack:
      return kLiveByStackColumns;
    case AllocationColumns::kLiveByStackAndSegment:
      return kLiveByStackAndSegmentColumns;
  }
  return kAllocationColumns;
}

std::uint64_t allocation_size(const sqlite::Statement& row, int column, int id_column) {
  const std::int64_t size = row.int64(column);
  if (!row.is_integer(column) || size < 0) {
    throw TraceError("the trace is damaged: allocation.size holds '" + row.text(column) +
                     "' in the row with id " + row.text(id_column) +
                     ", not a size; it was changed after vramtrace wrote it, or written by "
                     "another tool");
  }
  return static_cast<std::uint64_t>(size);
}

namespace {

// kLiveByStackColumns or kLiveByStackAndSegmentColumns from column c.
AllocationRecord read_live(const sqlite::Statement& row, bool segment, int c) {
  AllocationRecord record;
  AllocationRow& a = record.allocation;
  a.id = row.int64(c + 0);
  a.upid = row.int64(c + 1);
  a.kind = row.int32(c + 2);
  a.device = row.int32(c + 3);
  a.size = allocation_size(row, c + 4, c);
  a.alloc_seq = row.uint64(c + 5);
  if (!row.is_null(c + 6)) record.free.emplace().free_seq = row.uint64(c + 6);
  a.alloc_callsite_id = row.optional_int64(c + 7);
  if (segment) a.segment_id = row.optional_int64(c + 8);
  return record;
}

// kAllocationColumns (or kAllocatorTotalsColumns, NULL where it reads nothing) from column c.
AllocationRecord read_every_column(const sqlite::Statement& row, int c) {
  AllocationRecord record;
  AllocationRow& a = record.allocation;
  a.id = row.int64(c + 0);
  a.upid = row.int64(c + 1);
  a.kind = row.int32(c + 2);
  a.api = row.int32(c + 3);
  a.device = row.int32(c + 4);
  a.stream = row.uint64(c + 5);
  a.address = row.uint64(c + 6);
  a.result = row.int32(c + 11);
  // A failed call's size is what it asked for, any size_t (cudaMalloc(&p, SIZE_MAX)).
  a.size = a.result == 0 ? allocation_size(row, c + 7, c) : row.uint64(c + 7);
  a.requested_size = row.uint64(c + 8);
  a.flags = static_cast<std::uint32_t>(row.int64(c + 9));
  if (!row.is_null(c + 10)) a.pool = row.uint64(c + 10);
  a.alloc_seq = row.uint64(c + 12);
  a.alloc_ns = row.int64(c + 13);
  a.alloc_utid = row.int64(c + 14);
  a.alloc_callsite_id = row.optional_int64(c + 15);
  if (!row.is_null(c + 16)) {
    FreeRow& f = record.free.emplace();
    f.free_seq = row.uint64(c + 16);
    f.free_ns = row.int64(c + 17);
    f.free_utid = row.int64(c + 18);
    f.free_callsite_id = row.optional_int64(c + 19);
    f.free_api = row.int32(c + 20);
    f.allocator_allocated = row.optional_uint64(c + 26);
    f.allocator_reserved = row.optional_uint64(c + 27);
  }
  a.vmm_handle = row.optional_uint64(c + 21);
  a.vmm_offset = row.optional_uint64(c + 22);
  a.segment_id = row.optional_int64(c + 23);
  a.allocator_allocated = row.optional_uint64(c + 24);
  a.allocator_reserved = row.optional_uint64(c + 25);
  return record;
}

}  // namespace

AllocationRecord read_allocation(const sqlite::Statement& row, AllocationColumns columns,
                                 int first) {
  switch (columns) {
    case AllocationColumns::kAll:
    case AllocationColumns::kAllocatorTotals:
      break;
    case AllocationColumns::kLiveByStack:
      return read_live(row, false, first);
    case AllocationColumns::kLiveByStackAndSegment:
      return read_live(row, true, first);
  }
  return read_every_column(row, first);
}

AllocationRecord read_allocation(const sqlite::Statement& row) {
  return read_every_column(row, 0);
}

}  // namespace vramtrace::storage
