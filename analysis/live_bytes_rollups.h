// The time index's rollups (docs/schema.md, "Time index"), built in its one pass over the
// trace's events:
// - live_bytes_bucket: live bytes per (process, device, kind), as min, max and last in each of
//   kLiveBytesBuckets equal slices of the trace's time;
// - live_bytes_peak: the most live bytes per (process, device) of device memory in use
//   (occupies_device_memory) and of allocator blocks, with the event that first reached it.
// Storage keeps the rows (storage/time_index.h); what they count is decided here.
#pragma once

#include <cstdint>

#include "storage/time_index.h"

namespace vramtrace::analysis {

// Time slices of live_bytes_bucket, equal parts of the index's [start_ns, end_ns].
inline constexpr std::uint32_t kLiveBytesBuckets = 16384;

// live_bytes_peak's groups.
inline constexpr const char* kPeakGroupDeviceMemory = "device_memory";
inline constexpr const char* kPeakGroupBlocks = "blocks";

// A storage::BuildRollups.
void build_live_bytes_rollups(const storage::RollupSource& source, const storage::RollupSink& sink);

}  // namespace vramtrace::analysis
