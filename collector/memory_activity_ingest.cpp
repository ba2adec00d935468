// TraceIngest's part for the CUPTI backend's activity records (wire::MemoryActivity): each
// becomes a memory_activity row, and an allocation's or release's record names the allocation
// row that the API callback of the same call made or freed (correlation_index.h: by correlation
// id, else by address). A record that no callback matches is memory CUPTI saw only through
// activity: counted, so that the summary shows it.
#include "collector/trace_ingest.h"

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

void TraceIngest::on_memory_activity(Process& p, const wire::MemoryActivity& m) {
  storage::MemoryActivityRow row;
  row.id = next_memory_activity_id_++;
  row.upid = p.upid;
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
    const auto match = allocation ? p.correlations.take_alloc(m.correlation_id(), m.address())
                                  : p.correlations.take_free(m.correlation_id(), m.address());
    if (match) row.allocation_id = match->allocation_id;
    if (match && match->how == CorrelationIndex::How::kAddress)
      count("cupti_activity_matched_by_address", storage::Severity::kInfo,
            "CUPTI memory records whose correlation id named no callback, matched to the latest "
            "callback event at their address instead");
    if (!match && allocation)
      count("cupti_activity_allocation_without_callback", storage::Severity::kInfo,
            "CUPTI allocation records whose API call no callback recorded: memory that only "
            "CUPTI's activity saw (memory_activity rows with allocation_id NULL)");
    if (!match && !allocation)
      count("cupti_activity_release_without_callback", storage::Severity::kInfo,
            "CUPTI release records whose API call no callback recorded as a free of a live "
            "allocation (memory_activity rows with allocation_id NULL)");
  }
  writer_.add_memory_activity(row);
}

}  // namespace vramtrace::collector
