#include "storage/allocation_columns.h"

namespace vramtrace::storage {

AllocationRecord read_allocation(const sqlite::Statement& row) {
  AllocationRecord record;
  AllocationRow& a = record.allocation;
  a.id = row.int64(0);
  a.upid = row.int64(1);
  a.kind = row.int32(2);
  a.api = row.int32(3);
  a.device = row.int32(4);
  a.stream = row.uint64(5);
  a.address = row.uint64(6);
  a.size = row.uint64(7);
  a.requested_size = row.uint64(8);
  a.flags = static_cast<std::uint32_t>(row.int64(9));
  if (!row.is_null(10)) a.pool = row.uint64(10);
  a.result = row.int32(11);
  a.alloc_seq = row.uint64(12);
  a.alloc_ns = row.int64(13);
  a.alloc_utid = row.int64(14);
  a.alloc_callsite_id = row.optional_int64(15);
  if (!row.is_null(16)) {
    FreeRow& f = record.free.emplace();
    f.free_seq = row.uint64(16);
    f.free_ns = row.int64(17);
    f.free_utid = row.int64(18);
    f.free_callsite_id = row.optional_int64(19);
    f.free_api = row.int32(20);
    f.allocator_allocated = row.optional_uint64(26);
    f.allocator_reserved = row.optional_uint64(27);
  }
  a.vmm_handle = row.optional_uint64(21);
  a.vmm_offset = row.optional_uint64(22);
  a.segment_id = row.optional_int64(23);
  a.allocator_allocated = row.optional_uint64(24);
  a.allocator_reserved = row.optional_uint64(25);
  return record;
}

}  // namespace vramtrace::storage
