#include "analysis/reports/peak_report.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/time/whole_moment.h"
#include "storage/live_bytes_rollups.h"

namespace vramtrace::analysis {

std::vector<DevicePeakAt> build_peak_report(const storage::TraceReader& trace,
                                            const storage::TimeIndex& index,
                                            const ProcessSelection& processes,
                                            const StackShape& shape) {
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes())
    pids[process.start.upid] = process.start.pid;
  std::map<std::optional<std::int64_t>, std::vector<storage::StackFrame>> stacks;  // by callsite

  std::vector<DevicePeakAt> peaks;
  for (const storage::LiveBytesPeak& peak : index.peaks()) {
    if (!is_selected(processes, peak.upid)) continue;
    DevicePeakAt& at = peaks.emplace_back();
    at.upid = peak.upid;
    at.pid = pids[peak.upid];
    at.device = peak.device;
    at.group = peak.group;
    at.bytes = peak.bytes;
    at.seq = peak.seq;
    at.time_ns = peak.ns;
    // A peak reached by a new segment is the moment its block is there, as every report takes
    // it (time/whole_moment.h); the device memory live is the same at both.
    if (peak.group == storage::kPeakGroupDeviceMemory) {
      at.seq = with_new_segments_blocks(index, peak.upid, peak.seq);
      if (at.seq != peak.seq) at.time_ns = index.time_of(peak.upid, at.seq).value_or(peak.ns);
    }
    at.since_start_ns = at.time_ns - index.start_ns();
  }
  // What was live at each peak, by callsite: the index adds it up with the peaks, so that the
  // report reads a row per callsite rather than the live set, which can be millions.
  std::map<std::tuple<std::int64_t, int, std::string>, std::vector<const storage::LiveAtPeak*>>
      by_peak;
  const std::vector<storage::LiveAtPeak> live_at_peaks = index.live_at_peaks();
  for (const storage::LiveAtPeak& row : live_at_peaks)
    by_peak[{row.upid, row.device, row.group}].push_back(&row);
  for (DevicePeakAt& at : peaks) {
    std::vector<StackBytes> live;
    const auto found = by_peak.find({at.upid, at.device, at.group});
    if (found != by_peak.end()) {
      for (const storage::LiveAtPeak* row : found->second) {
        auto [it, added] = stacks.try_emplace(row->callsite_id);
        if (added)
          it->second = shape ? shape(trace.stack(row->callsite_id)) : trace.stack(row->callsite_id);
        live.push_back({&it->second, row->bytes, row->count});
        at.live_count += row->count;
      }
    }
    at.top_down = build_callsite_tree(live, TreeDirection::kTopDown);
    at.bottom_up = build_callsite_tree(live, TreeDirection::kBottomUp);
  }
  std::stable_sort(peaks.begin(), peaks.end(), [](const DevicePeakAt& a, const DevicePeakAt& b) {
    // storage::kPeakGroupDeviceMemory ("device_memory") before storage::kPeakGroupBlocks
    // ("blocks").
    return std::tuple(a.upid, a.device, b.group) < std::tuple(b.upid, b.device, a.group);
  });
  return peaks;
}

void keep_peaks_in_scope(std::vector<DevicePeakAt>& peaks, std::optional<int> device,
                         std::optional<MemoryLevel> level) {
  std::erase_if(peaks, [&](const DevicePeakAt& peak) {
    const bool blocks = peak.group == storage::kPeakGroupBlocks;
    return (device && peak.device != *device) ||
           (level && blocks != (*level == MemoryLevel::kBlock));
  });
}

}  // namespace vramtrace::analysis
