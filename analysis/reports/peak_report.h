// The peak: per process and device, the moment the most memory was live, and what was live
// then as a callsite tree, top-down and bottom-up (Python frames included where the stacks
// have them). Two peaks where a process has a caching allocator: its device memory in use
// (segments and raw allocations: what the driver sees) and its blocks (tensors: what the
// program holds), which are different moments and different stacks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct DevicePeakAt {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  int device = 0;
  std::string
      group;  // storage::kPeakGroupDeviceMemory or storage::kPeakGroupBlocks (live_bytes_rollups.h)
  std::uint64_t bytes = 0;
  std::uint64_t seq = 0;                         // the event that first reached it
  std::int64_t time_ns = 0, since_start_ns = 0;  // since_start: after the trace's first allocation
  std::uint64_t live_count = 0;                  // allocations live then, of this device and group
  std::vector<CallsiteNode> top_down, bottom_up;
};

// How a stack is shaped before the trees merge it (the text's folding of interpreter and
// framework frames); empty: as recorded.
using StackShape =
    std::function<std::vector<storage::StackFrame>(const std::vector<storage::StackFrame>&)>;

// By upid, device, then device memory before blocks.
std::vector<DevicePeakAt> build_peak_report(const storage::TraceReader& trace,
                                            const storage::TimeIndex& index,
                                            const ProcessSelection& processes,
                                            const StackShape& shape = {});

// Keeps the peaks the report options ask for: with `device`, that device's; with `level`,
// the allocator's blocks' peaks (block) or the device memory's (segment).
void keep_peaks_in_scope(std::vector<DevicePeakAt>& peaks, std::optional<int> device,
                         std::optional<MemoryLevel> level);

}  // namespace vramtrace::analysis
