// Both peaks of a trace (device_peaks.h), from where they are cheapest. A trace that keeps a
// time index (analysis/time/report_time_index.h: a finished trace this user can write) holds them
// in live_bytes_peak, made by the same sweep once, when the index was built
// (storage/live_bytes_rollups.h); any other trace is swept here, once per kind of peak. On a
// 10-million-allocation trace the sweeps are most of what `summary` costs.
#pragma once

#include <vector>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "analysis/time/device_peaks.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct TracePeaks {
  std::vector<DevicePeak> device;  // as find_device_peaks()
  std::vector<DevicePeak> blocks;  // as find_block_peaks()
};

// As find_device_peaks() and find_block_peaks() with the same arguments. The index keeps no
// peak per kind: a scope naming a kind is swept.
TracePeaks find_trace_peaks(const storage::TraceReader& trace,
                            const ProcessSelection& processes = std::nullopt,
                            const AllocationScope& allocations = {});

// find_device_peaks()'s answer, read from `index` where one is given (the trace's own, kept in
// its file), swept otherwise: for a caller that has opened the index already or knows there is
// none (`vramtrace gate`).
std::vector<DevicePeak> find_device_peaks(const storage::TraceReader& trace,
                                          const storage::TimeIndex* index,
                                          const ProcessSelection& processes);

}  // namespace vramtrace::analysis
