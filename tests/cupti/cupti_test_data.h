// Callback data and activity records as CUPTI hands them to the CUPTI backend, built with the
// real CUPTI headers (and CUDA's parameter structs), for tests that have no GPU or driver.
#pragma once

#include <cupti.h>  // with CUDA's parameter structs

#include <cstdint>
#include <cstring>

namespace vramtrace::testing {

// One API call's two callbacks: the same parameter struct and correlation id, entry then exit.
template <class Params>
struct ApiCall {
  Params params;
  int32_t result = 0;  // cudaError_t or CUresult, as the function returned it
  CUpti_CallbackData data{};

  ApiCall(const Params& p, uint32_t correlation_id) : params(p) {
    data.functionParams = &params;
    data.correlationId = correlation_id;
    data.functionName = "test";
  }
  const CUpti_CallbackData& enter() {
    data.callbackSite = CUPTI_API_ENTER;
    data.functionReturnValue = nullptr;  // CUPTI has none yet on entry
    return data;
  }
  const CUpti_CallbackData& exit(int32_t returned) {
    result = returned;
    data.callbackSite = CUPTI_API_EXIT;
    data.functionReturnValue = &result;
    return data;
  }
};

inline CUpti_ActivityMemory4 memory_record(CUpti_ActivityMemoryOperationType operation,
                                           CUpti_ActivityMemoryKind kind, uint32_t correlation_id,
                                           uint64_t address, uint64_t bytes) {
  CUpti_ActivityMemory4 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  r.memoryOperationType = operation;
  r.memoryKind = kind;
  r.correlationId = correlation_id;
  r.address = address;
  r.bytes = bytes;
  r.timestamp = 1'000'000 + correlation_id;
  r.deviceId = 0;
  r.streamId = CUPTI_INVALID_STREAM_ID;
  return r;
}

inline CUpti_ActivityMemoryPool3 pool_record(CUpti_ActivityMemoryPoolOperationType operation,
                                             uint32_t correlation_id, uint64_t address,
                                             uint64_t size) {
  CUpti_ActivityMemoryPool3 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  r.memoryPoolOperationType = operation;
  r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  r.correlationId = correlation_id;
  r.deviceId = 1;
  r.address = address;
  r.size = size;
  r.releaseThreshold = 1 << 20;
  r.utilizedSize = 4096;
  r.timestamp = 2'000'000 + correlation_id;
  return r;
}

template <class Record>
const CUpti_Activity& as_activity(const Record& r) {
  return reinterpret_cast<const CUpti_Activity&>(r);
}

}  // namespace vramtrace::testing
