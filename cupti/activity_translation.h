// The CUPTI backend's activity records, as MemoryActivity wire events: MEMORY2 records
// (CUpti_ActivityMemory4: one per allocation and one per release, each with the correlation id
// of the API call that made it) and MEMORY_POOL records (CUpti_ActivityMemoryPool3: a pool
// created, trimmed or destroyed).
//
// A pure function of the record: the unit tests build records with the real CUPTI headers.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <optional>

#include "wire_encoder.h"

namespace vramtrace::cupti {

// The CUPTI API version (cuptiGetVersion) from which MEMORY2 records end with `source`
// (CUpti_ActivityMemory4, CUDA 13.0). An older CUPTI hands out shorter records, whose `source`
// must not be read.
inline constexpr uint32_t kFirstCuptiVersionWithMemorySource = 130000;

// A record of any kind; nullopt for the kinds and operations that are not memory events.
// `cupti_version` is the running CUPTI's (cuptiGetVersion).
std::optional<preload::MemoryActivityEvent> translate_activity(const CUpti_Activity& record,
                                                               uint32_t cupti_version);

// vramtrace_wire_Kind of a MEMORY2 record's memory kind (an async-API allocation is KIND_ASYNC
// whatever its memory kind, as the shim's events are).
int wire_kind(CUpti_ActivityMemoryKind kind, bool is_async);

}  // namespace vramtrace::cupti
