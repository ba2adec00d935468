// The time index's rollups (docs/schema.md, "Time index"), built in its one pass over the
// trace's events, or kept up by the writer as the events arrive:
// - live_bytes_bucket: live bytes per (process, device, kind), as min, max and last in each of
//   the index's time slices (live_bytes_bucket_shift: at most kLiveBytesBuckets of a
//   power of two ns);
// - live_bytes_peak: the most live bytes per (process, device) of device memory in use
//   (kind_occupies_device_memory, storage/schema_enums.h) and of allocator blocks, with the event
//   that first reached it;
// - live_at_peak: what was live at each of those peaks, by callsite (count and bytes), which
//   the `peak` report shows without reading the live set again.
// The time index stores and reads the rows (storage/time_index.h); what they count is decided
// here, beside the table of kinds that says which bytes are device memory.
#pragma once

#include <cstdint>
#include <memory>

#include "storage/rollup_maker.h"

namespace vramtrace::storage {

// live_bytes_peak's groups.
inline constexpr const char* kPeakGroupDeviceMemory = "device_memory";
inline constexpr const char* kPeakGroupBlocks = "blocks";

// A BuildRollups.
void build_live_bytes_rollups(const RollupSource& source, const RollupSink& sink);

// The same rows kept up as rows arrive (TraceWriter's kAsRowsArrive): each series' slices start
// at 1 ns and double, two merged into one, whenever its events would span more than
// kLiveBytesBuckets of them, so that it holds that many at most and ends at the index's size.
std::unique_ptr<RollupKeeper> keep_live_bytes_rollups();

}  // namespace vramtrace::storage
