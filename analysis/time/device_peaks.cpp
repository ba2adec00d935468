#include "analysis/time/device_peaks.h"

#include <map>

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

  struct DeviceSweep {
    // Signed: a damaged trace could free before it allocates; never let that wrap around.
    std::int64_t live = 0;
    DevicePeak peak;
  };
  std::map<std::pair<std::int64_t, int>, DeviceSweep> sweeps;  // by (upid, device)

  trace.for_each_allocation_event([&](const storage::AllocationEvent& event) {
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
    }
  });

  std::vector<DevicePeak> peaks;
  for (auto& [key, sweep] : sweeps) {
    if (sweep.peak.bytes == 0) continue;
    DevicePeak& peak = peaks.emplace_back(sweep.peak);
    peak.upid = key.first;
    peak.device = key.second;
    const auto pid = pid_of_upid.find(key.first);
    peak.pid = pid != pid_of_upid.end() ? pid->second : 0;
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
