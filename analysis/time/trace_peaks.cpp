#include "analysis/time/trace_peaks.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/time/report_time_index.h"
#include "analysis/time/whole_moment.h"
#include "storage/live_bytes_rollups.h"

namespace vramtrace::analysis {

namespace {

// Both kinds of peak as live_bytes_peak holds them, in find_device_peaks()'s order.
TracePeaks peaks_in_index(const storage::TraceReader& trace, const storage::TimeIndex& index,
                          const ProcessSelection& processes, const AllocationScope& allocations) {
  TracePeaks peaks;
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes())
    pids[process.start.upid] = process.start.pid;
  for (const storage::LiveBytesPeak& row : index.peaks()) {
    if (!is_selected(processes, row.upid)) continue;
    if (allocations.device && row.device != *allocations.device) continue;
    const bool blocks = row.group == storage::kPeakGroupBlocks;
    if (!blocks && row.group != storage::kPeakGroupDeviceMemory) continue;
    DevicePeak peak;
    peak.upid = row.upid;
    peak.pid = pids[row.upid];
    peak.device = row.device;
    peak.bytes = row.bytes;
    peak.at_ns = row.ns;
    peak.at_seq = row.seq;
    if (!blocks) {
      peak.at_seq = with_new_segments_blocks(index, row.upid, row.seq);
      if (peak.at_seq != row.seq)
        peak.at_ns = index.time_of(row.upid, peak.at_seq).value_or(row.ns);
    }
    (blocks ? peaks.blocks : peaks.device).push_back(peak);
  }
  for (std::vector<DevicePeak>* list : {&peaks.device, &peaks.blocks}) {
    std::sort(list->begin(), list->end(), [](const DevicePeak& a, const DevicePeak& b) {
      return std::tie(a.upid, a.device) < std::tie(b.upid, b.device);
    });
  }
  return peaks;
}

}  // namespace

TracePeaks find_trace_peaks(const storage::TraceReader& trace, const ProcessSelection& processes,
                            const AllocationScope& allocations) {
  const std::unique_ptr<storage::TimeIndex> index =
      allocations.kind ? nullptr : open_time_index_if_kept(trace);
  if (!index) {
    TracePeaks peaks;
    peaks.device = find_device_peaks(trace, processes, allocations);
    peaks.blocks = find_block_peaks(trace, processes, allocations);
    return peaks;
  }
  return peaks_in_index(trace, *index, processes, allocations);
}

std::vector<DevicePeak> find_device_peaks(const storage::TraceReader& trace,
                                          const storage::TimeIndex* index,
                                          const ProcessSelection& processes) {
  if (index == nullptr) return find_device_peaks(trace, processes);
  return peaks_in_index(trace, *index, processes, {}).device;
}

}  // namespace vramtrace::analysis
