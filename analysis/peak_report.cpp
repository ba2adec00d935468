#include "analysis/peak_report.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/device_peaks.h"
#include "analysis/live_bytes_rollups.h"
#include "storage/schema.h"

namespace vramtrace::analysis {

std::vector<DevicePeakAt> build_peak_report(const storage::TraceReader& trace,
                                            const storage::TimeIndex& index,
                                            const ProcessSelection& processes) {
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
    at.since_start_ns = peak.ns - index.start_ns();
    const bool blocks = peak.group == kPeakGroupBlocks;
    std::map<std::optional<std::int64_t>, std::pair<std::uint64_t, std::uint64_t>> by_callsite;
    for (const storage::AllocationRecord& record : index.live_at(peak.upid, peak.seq)) {
      const storage::AllocationRow& a = record.allocation;
      if (a.device != peak.device) continue;
      if (blocks ? a.kind != storage::allocation_kind::kBlock : !occupies_device_memory(a.kind))
        continue;
      auto& [bytes, count] = by_callsite[a.alloc_callsite_id];
      bytes += a.size;
      count += 1;
      at.live_count += 1;
    }
    std::vector<StackBytes> live;
    for (const auto& [callsite, totals] : by_callsite) {
      auto [it, added] = stacks.try_emplace(callsite);
      if (added) it->second = trace.stack(callsite);
      live.push_back({&it->second, totals.first, totals.second});
    }
    at.top_down = build_callsite_tree(live, TreeDirection::kTopDown);
    at.bottom_up = build_callsite_tree(live, TreeDirection::kBottomUp);
  }
  std::stable_sort(peaks.begin(), peaks.end(), [](const DevicePeakAt& a, const DevicePeakAt& b) {
    // kPeakGroupDeviceMemory ("device_memory") before kPeakGroupBlocks ("blocks").
    return std::tuple(a.upid, a.device, b.group) < std::tuple(b.upid, b.device, a.group);
  });
  return peaks;
}

}  // namespace vramtrace::analysis
