#include "burst_trace.h"

#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_writer.h"

namespace vramtrace::testing {

std::string write_burst_trace(const std::filesystem::path& path) {
  constexpr std::uint64_t kMiB = 1024 * 1024;
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  storage::ProcessRow process;
  process.upid = 1;
  process.pid = 600;
  writer->add_process(process);
  const auto allocate = [&](std::int64_t id, std::uint64_t seq, std::int64_t after_ns,
                            std::uint64_t size) {
    storage::AllocationRow row;
    row.id = id;
    row.upid = 1;
    row.kind = storage::allocation_kind::kDevice;
    row.size = size;
    row.address = 0x1000'0000 * static_cast<std::uint64_t>(id);
    row.alloc_seq = seq;
    row.alloc_ns = kBurstTraceStartNs + after_ns;
    writer->add_allocation(row);
  };
  const auto free = [&](std::int64_t id, std::uint64_t seq, std::int64_t after_ns) {
    storage::FreeRow row;
    row.free_seq = seq;
    row.free_ns = kBurstTraceStartNs + after_ns;
    writer->set_free(id, row);
  };
  allocate(1, 1, 0, 4 * kMiB);
  allocate(2, 2, 5 * kBurstTraceBucketNs, kMiB);
  allocate(3, 3, 5 * kBurstTraceBucketNs + 200, 2 * kMiB);
  free(3, 4, 5 * kBurstTraceBucketNs + 600);
  // The index's buckets are the smallest power of two ns that cuts [start, end] into at most
  // kLiveBytesBuckets: this span takes exactly that many of 1024 ns.
  free(1, 5, kBurstTraceBucketNs * storage::kLiveBytesBuckets - 1);
  return writer->finish(&error) ? std::string() : error;
}

}  // namespace vramtrace::testing
