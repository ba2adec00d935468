// Peak live device memory: the most bytes a process held on each device at once.
//
// A sweep over each process's allocation and free events in its own sequence order, which is
// the order the process saw its memory come and go, so the peak is exact per process. Processes
// are swept separately: two processes sharing a device at the same time are not added up.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// Kinds whose bytes are GPU memory in use: device, managed (counted on the device it was
// allocated from), async, and VMM mappings; the table of kinds says which
// (storage/schema_enums.h, and why there). A handle created and never mapped is therefore not in
// the peak; the summary reports it apart.
bool occupies_device_memory(int kind);

struct DevicePeak {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  int device = 0;  // -1: the device was not known
  std::uint64_t bytes = 0;
  std::int64_t at_ns = 0;    // when the peak was first reached
  std::uint64_t at_seq = 0;  // the allocation event that reached it
};

// One entry per (process, device) that held device memory, by upid then device; only the
// selected processes, and of their allocations only those in `allocations`.
std::vector<DevicePeak> find_device_peaks(const storage::TraceReader& trace,
                                          const ProcessSelection& processes = std::nullopt,
                                          const AllocationScope& allocations = {});

// The same sweep over a caching allocator's blocks (kind `block`): the most bytes its tensors
// held at once, per process and device. Empty for processes with no allocator events. Blocks
// sit inside segments that find_device_peaks() counts, so the two are never added up.
std::vector<DevicePeak> find_block_peaks(const storage::TraceReader& trace,
                                         const ProcessSelection& processes = std::nullopt,
                                         const AllocationScope& allocations = {});

}  // namespace vramtrace::analysis
