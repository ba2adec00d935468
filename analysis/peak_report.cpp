#include "analysis/peak_report.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/device_peaks.h"
#include "analysis/live_bytes_rollups.h"
#include "storage/schema.h"

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
    at.since_start_ns = peak.ns - index.start_ns();
  }
  // What was live at each peak, by callsite: one pass over the live sets of a process's peaks
  // (mostly the same allocations) serves them all, and keeps only the sums.
  using ByCallsite = std::map<std::optional<std::int64_t>, std::pair<std::uint64_t, std::uint64_t>>;
  std::vector<ByCallsite> by_callsite(peaks.size());
  std::map<std::int64_t, std::vector<std::size_t>> of_process;  // peaks, by upid
  for (std::size_t i = 0; i < peaks.size(); ++i) of_process[peaks[i].upid].push_back(i);
  for (const auto& entry : of_process) {
    const std::vector<std::size_t>& of_upid = entry.second;  // a lambda below takes it
    std::vector<std::uint64_t> seqs;
    seqs.reserve(of_upid.size());
    for (const std::size_t i : of_upid) seqs.push_back(peaks[i].seq);
    index.for_each_live_at_any(
        entry.first, seqs,
        [&](const storage::AllocationRecord& record) {
          const storage::AllocationRow& a = record.allocation;
          for (const std::size_t i : of_upid) {
            DevicePeakAt& at = peaks[i];
            if (a.device != at.device || a.alloc_seq > at.seq ||
                (record.free && record.free->free_seq <= at.seq))
              continue;
            const bool blocks = at.group == kPeakGroupBlocks;
            if (blocks ? a.kind != storage::allocation_kind::kBlock
                       : !occupies_device_memory(a.kind))
              continue;
            auto& [bytes, count] = by_callsite[i][a.alloc_callsite_id];
            bytes += a.size;
            count += 1;
            at.live_count += 1;
          }
        },
        storage::AllocationColumns::kLiveByStack);
  }
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    std::vector<StackBytes> live;
    for (const auto& [callsite, totals] : by_callsite[i]) {
      auto [it, added] = stacks.try_emplace(callsite);
      if (added) it->second = shape ? shape(trace.stack(callsite)) : trace.stack(callsite);
      live.push_back({&it->second, totals.first, totals.second});
    }
    peaks[i].top_down = build_callsite_tree(live, TreeDirection::kTopDown);
    peaks[i].bottom_up = build_callsite_tree(live, TreeDirection::kBottomUp);
  }
  std::stable_sort(peaks.begin(), peaks.end(), [](const DevicePeakAt& a, const DevicePeakAt& b) {
    // kPeakGroupDeviceMemory ("device_memory") before kPeakGroupBlocks ("blocks").
    return std::tuple(a.upid, a.device, b.group) < std::tuple(b.upid, b.device, a.group);
  });
  return peaks;
}

}  // namespace vramtrace::analysis
