// Schema v2 of a vramtrace trace file: its identity (application_id, user_version), the
// fixed rows of the enumeration tables, and the SQL that creates it. docs/schema.md is the
// user-facing description of every table and column; keep the two in step.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace vramtrace::storage {

// PRAGMA application_id: 'VRMT'. Tells a trace from any other SQLite file.
inline constexpr std::int32_t kApplicationId = 0x56524D54;
// PRAGMA user_version: bumped whenever a reader of the previous version would misread a file.
// 2: allocations stored compact (allocation_compact and the tables beside it), `allocation`
// a view with the columns of version 1's table.
inline constexpr int kSchemaVersion = 2;

// Ids of `allocation_kind` rows; the same numbers as the wire's `Kind`. Later kinds (allocator
// blocks) are new rows.
namespace allocation_kind {
inline constexpr int kUnknown = 0;
inline constexpr int kDevice = 1;
inline constexpr int kManaged = 2;
inline constexpr int kHostPinned = 3;
inline constexpr int kAsync = 4;
// The driver's virtual memory API: three layers, not three amounts of memory.
inline constexpr int kVmmReservation = 5;  // cuMemAddressReserve: address space only
inline constexpr int kVmmHandle = 6;       // cuMemCreate: physical memory; address = the handle
inline constexpr int kVmmMapping = 7;      // cuMemMap: a handle's memory at an address
// A caching allocator's block (PyTorch's tensors), inside a segment of the kinds above.
inline constexpr int kBlock = 8;
}  // namespace allocation_kind

// Ids of `api` rows: the function that made an event. Same numbers as the wire's `Api`.
namespace api {
inline constexpr int kUnknown = 0;
inline constexpr int kCudaMalloc = 1;
inline constexpr int kCudaFree = 2;
inline constexpr int kCudaMallocManaged = 3;
inline constexpr int kCudaMallocHost = 4;
inline constexpr int kCudaHostAlloc = 5;
inline constexpr int kCudaFreeHost = 6;
inline constexpr int kCudaMallocPitch = 7;
inline constexpr int kCudaMalloc3D = 8;
inline constexpr int kCudaMallocAsync = 9;
inline constexpr int kCudaMallocFromPoolAsync = 10;
inline constexpr int kCudaFreeAsync = 11;
// The driver API, named as the user calls it (cuMemAlloc, not its ABI name cuMemAlloc_v2).
inline constexpr int kCuMemAlloc = 12;
inline constexpr int kCuMemAllocPitch = 13;
inline constexpr int kCuMemFree = 14;
inline constexpr int kCuMemAllocManaged = 15;
inline constexpr int kCuMemHostAlloc = 16;
inline constexpr int kCuMemAllocHost = 17;
inline constexpr int kCuMemFreeHost = 18;
inline constexpr int kCuMemAllocAsync = 19;
inline constexpr int kCuMemAllocFromPoolAsync = 20;
inline constexpr int kCuMemFreeAsync = 21;
inline constexpr int kCuMemCreate = 22;
inline constexpr int kCuMemRelease = 23;
inline constexpr int kCuMemAddressReserve = 24;
inline constexpr int kCuMemAddressFree = 25;
inline constexpr int kCuMemMap = 26;
inline constexpr int kCuMemUnmap = 27;
// PyTorch's allocator reports (c10::reportMemoryUsageToProfiler, reportOutOfMemoryToProfiler).
inline constexpr int kC10ReportMemoryUsage = 28;
inline constexpr int kC10ReportOutOfMemory = 29;
}  // namespace api

struct NamedId {
  int id;
  std::string_view name;
};

// The rows a new trace's `allocation_kind` and `api` tables are filled with.
std::span<const NamedId> allocation_kind_rows();
std::span<const NamedId> api_rows();

// Creates every table, view and trigger of the current schema (no indexes, no pragmas, no rows).
std::string_view schema_tables_sql();
// Indexes, created once ingest is over: maintaining them row by row would slow the writer.
std::string_view schema_indexes_sql();

// How a trace stores its allocations: schema 1 in the table `allocation`, schema 2 and later in
// allocation_compact and the tables beside it, under the view `allocation`. Readers query the
// name `allocation` either way; what differs is where its indexes go.
enum class AllocationStorage { kTable, kCompact };
AllocationStorage allocation_storage_of_version(int schema_version);

// The allocations' part of the indexes (their names below): a third of a trace's bytes and
// half of the time it takes to finish one, so `vramtrace run` leaves them to the step that
// indexes the trace by time (storage/time_index.h), which needs them first.
std::string_view allocation_indexes_sql(AllocationStorage storage = AllocationStorage::kCompact);
std::span<const std::string_view> allocation_index_names(
    AllocationStorage storage = AllocationStorage::kCompact);
// Tables (or views) a reader requires before it accepts a file as a trace; a trace of schema 2
// or later requires compact_allocation_tables() too.
std::span<const std::string_view> required_tables();
std::span<const std::string_view> compact_allocation_tables();

}  // namespace vramtrace::storage
