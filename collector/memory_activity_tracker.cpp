#include "collector/memory_activity_tracker.h"

#include "storage/trace_writer.h"

namespace vramtrace::collector {
namespace {

const char* operation_name(wire::MemoryActivity::Operation operation) {
  switch (operation) {
    case wire::MemoryActivity::OPERATION_ALLOCATION:
      return "allocation";
    case wire::MemoryActivity::OPERATION_RELEASE:
      return "release";
    case wire::MemoryActivity::OPERATION_POOL_CREATED:
      return "pool_created";
    case wire::MemoryActivity::OPERATION_POOL_DESTROYED:
      return "pool_destroyed";
    case wire::MemoryActivity::OPERATION_POOL_TRIMMED:
      return "pool_trimmed";
    default:
      return "unknown";
  }
}

}  // namespace

MemoryActivityTracker::MemoryActivityTracker(storage::TraceWriter& writer, IngestStats& stats)
    : writer_(writer), stats_(stats) {}

void MemoryActivityTracker::on_activity(CorrelationIndex& callbacks, int64_t upid,
                                        const wire::MemoryActivity& m) {
  storage::MemoryActivityRow row;
  row.id = next_id_++;
  row.upid = upid;
  row.operation = operation_name(m.operation());
  row.kind = m.kind();
  row.correlation_id = m.correlation_id();
  row.address = m.address();
  row.size = m.size();
  row.device = m.device();
  row.stream = m.stream();
  row.cupti_ns = m.timestamp_ns();
  const bool pool_record = m.operation() == wire::MemoryActivity::OPERATION_POOL_CREATED ||
                           m.operation() == wire::MemoryActivity::OPERATION_POOL_DESTROYED ||
                           m.operation() == wire::MemoryActivity::OPERATION_POOL_TRIMMED;
  if (pool_record || m.pool_address() != 0) {
    row.pool_address = m.pool_address();
    row.release_threshold = m.release_threshold();
    row.utilized_size = m.utilized_size();
  }
  if (m.operation() == wire::MemoryActivity::OPERATION_POOL_TRIMMED)
    row.min_bytes_to_keep = m.min_bytes_to_keep();
  if (!m.source().empty()) row.source = m.source();

  const bool allocation = m.operation() == wire::MemoryActivity::OPERATION_ALLOCATION;
  if (allocation || m.operation() == wire::MemoryActivity::OPERATION_RELEASE) {
    const auto match = allocation ? callbacks.take_alloc(m.correlation_id(), m.address())
                                  : callbacks.take_free(m.correlation_id(), m.address());
    if (match) row.allocation_id = match->allocation_id;
    if (match && match->how == CorrelationIndex::How::kAddress)
      stats_.add(Stat::kCuptiActivityMatchedByAddress);
    if (!match && allocation) stats_.add(Stat::kCuptiActivityAllocationWithoutCallback);
    if (!match && !allocation) stats_.add(Stat::kCuptiActivityReleaseWithoutCallback);
  }
  writer_.add_memory_activity(row);
}

}  // namespace vramtrace::collector
