#include "activity_translation.h"

#include "nanopb/vramtrace.pb.h"

namespace vramtrace::cupti {
namespace {

using preload::MemoryActivityEvent;

// CUPTI says "no stream" with CUPTI_INVALID_STREAM_ID; the wire says it with 0.
uint32_t stream_of(uint32_t stream_id) {
  return stream_id == CUPTI_INVALID_STREAM_ID ? 0 : stream_id;
}

std::optional<MemoryActivityEvent> memory(const CUpti_ActivityMemory4& r, uint32_t cupti_version) {
  MemoryActivityEvent e{};
  switch (r.memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      e.operation = vramtrace_wire_MemoryActivity_Operation_OPERATION_ALLOCATION;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      e.operation = vramtrace_wire_MemoryActivity_Operation_OPERATION_RELEASE;
      break;
    default:
      return std::nullopt;
  }
  e.kind = wire_kind(r.memoryKind, r.isAsync != 0);
  e.correlation_id = r.correlationId;
  e.address = r.address;
  e.size = r.bytes;
  e.device = static_cast<int32_t>(r.deviceId);
  e.stream = stream_of(r.streamId);
  e.timestamp_ns = r.timestamp;
  if (r.memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID) {
    e.pool_address = r.memoryPoolConfig.address;
    e.release_threshold = r.memoryPoolConfig.releaseThreshold;
    e.utilized_size = r.memoryPoolConfig.utilizedSize;
  }
  e.source = cupti_version >= kFirstCuptiVersionWithMemorySource ? r.source : nullptr;
  return e;
}

std::optional<MemoryActivityEvent> pool(const CUpti_ActivityMemoryPool3& r) {
  MemoryActivityEvent e{};
  switch (r.memoryPoolOperationType) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
      e.operation = vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_CREATED;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
      e.operation = vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_DESTROYED;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
      e.operation = vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_TRIMMED;
      e.min_bytes_to_keep = r.minBytesToKeep;
      break;
    default:
      return std::nullopt;
  }
  e.kind = vramtrace_wire_Kind_KIND_ASYNC;
  e.correlation_id = r.correlationId;
  e.address = r.address;
  e.size = r.size;
  e.device = static_cast<int32_t>(r.deviceId);
  e.timestamp_ns = r.timestamp;
  e.pool_address = r.address;
  e.release_threshold = r.releaseThreshold;
  e.utilized_size = r.utilizedSize;
  return e;
}

}  // namespace

int wire_kind(CUpti_ActivityMemoryKind kind, bool is_async) {
  if (is_async) return vramtrace_wire_Kind_KIND_ASYNC;
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return vramtrace_wire_Kind_KIND_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return vramtrace_wire_Kind_KIND_MANAGED;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return vramtrace_wire_Kind_KIND_HOST_PINNED;
    default:  // pageable, and the static (module global) kinds, which no API call allocates
      return vramtrace_wire_Kind_KIND_UNKNOWN;
  }
}

std::optional<MemoryActivityEvent> translate_activity(const CUpti_Activity& record,
                                                      uint32_t cupti_version) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return memory(reinterpret_cast<const CUpti_ActivityMemory4&>(record), cupti_version);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
      return pool(reinterpret_cast<const CUpti_ActivityMemoryPool3&>(record));
    default:
      return std::nullopt;
  }
}

}  // namespace vramtrace::cupti
