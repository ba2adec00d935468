#include "analysis/time/device_peaks.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "analysis/time/whole_moment.h"
#include "storage/schema.h"

namespace vramtrace::analysis {

bool occupies_device_memory(int kind) {
  return storage::kind_occupies_device_memory(kind);
}

namespace {

std::vector<DevicePeak> find_peaks(const storage::TraceReader& trace,
                                   const ProcessSelection& processes, bool (*counts)(int kind),
                                   const AllocationScope& allocations) {
  std::map<std::int64_t, std::uint32_t> pid_of_upid;
  for (const storage::ProcessRecord& process : trace.processes()) {
    pid_of_upid[process.start.upid] = process.start.pid;
  }
  // Device memory's peak reached by a caching allocator's segment is taken at the block it was
  // made for (time/whole_moment.h, as with the time index): the blocks that follow the peak's
  // event closely are its candidates, and their segments are read once the sweep is done.
  const bool device_memory = counts == &occupies_device_memory;
  struct BlockEvent {
    std::int64_t id = 0;
    std::uint64_t seq = 0;
    std::int64_t ns = 0;
  };

  struct DeviceSweep {
    // Signed: a damaged trace could free before it allocates; never let that wrap around.
    std::int64_t live = 0;
    DevicePeak peak;
    std::int64_t peak_allocation = 0;  // the allocation whose event reached the peak
    std::vector<BlockEvent> blocks_after;
  };
  std::map<std::pair<std::int64_t, int>, DeviceSweep> sweeps;  // by (upid, device)

  trace.for_each_allocation_event([&](const storage::AllocationEvent& event) {
    if (device_memory && event.type == storage::AllocationEvent::Type::kAlloc &&
        event.kind == storage::allocation_kind::kBlock) {
      const auto found = sweeps.find({event.upid, event.device});
      if (found != sweeps.end() && event.seq > found->second.peak.at_seq &&
          event.seq <= found->second.peak.at_seq + kBlockAfterSegmentEvents)
        found->second.blocks_after.push_back({event.allocation_id, event.seq, event.ns});
    }
    if (!counts(event.kind) || !allocations.matches(event.device, event.kind) ||
        !is_selected(processes, event.upid))
      return;
    DeviceSweep& sweep = sweeps[{event.upid, event.device}];
    const auto size = static_cast<std::int64_t>(event.size);
    if (event.type == storage::AllocationEvent::Type::kFree) {
      sweep.live -= size;
      return;
    }
    sweep.live += size;
    if (sweep.live > static_cast<std::int64_t>(sweep.peak.bytes)) {
      sweep.peak.bytes = static_cast<std::uint64_t>(sweep.live);
      sweep.peak.at_ns = event.ns;
      sweep.peak.at_seq = event.seq;
      sweep.peak_allocation = event.allocation_id;
      sweep.blocks_after.clear();
    }
  });

  std::vector<std::int64_t> candidates;
  for (const auto& [key, sweep] : sweeps)
    for (const BlockEvent& block : sweep.blocks_after) candidates.push_back(block.id);
  std::map<std::int64_t, std::optional<std::int64_t>> segment_of;
  if (!candidates.empty()) {
    std::sort(candidates.begin(), candidates.end());
    storage::AllocationFilter filter;
    filter.ids = candidates;
    trace.for_each_allocation(filter, [&](const storage::AllocationRecord& record) {
      segment_of[record.allocation.id] = record.allocation.segment_id;
    });
  }

  std::vector<DevicePeak> peaks;
  for (auto& [key, sweep] : sweeps) {
    if (sweep.peak.bytes == 0) continue;
    DevicePeak& peak = peaks.emplace_back(sweep.peak);
    peak.upid = key.first;
    peak.device = key.second;
    const auto pid = pid_of_upid.find(key.first);
    peak.pid = pid != pid_of_upid.end() ? pid->second : 0;
    for (const BlockEvent& block : sweep.blocks_after) {
      const auto segment = segment_of.find(block.id);
      if (segment == segment_of.end() || segment->second != sweep.peak_allocation) continue;
      peak.at_seq = block.seq;
      peak.at_ns = block.ns;
      break;
    }
  }
  return peaks;
}

}  // namespace

std::vector<DevicePeak> find_device_peaks(const storage::TraceReader& trace,
                                          const ProcessSelection& processes,
                                          const AllocationScope& allocations) {
  return find_peaks(trace, processes, &occupies_device_memory, allocations);
}

std::vector<DevicePeak> find_block_peaks(const storage::TraceReader& trace,
                                         const ProcessSelection& processes,
                                         const AllocationScope& allocations) {
  return find_peaks(
      trace, processes, [](int kind) { return kind == storage::allocation_kind::kBlock; },
      allocations);
}

}  // namespace vramtrace::analysis
