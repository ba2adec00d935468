// Peak live device memory: the most bytes a process held on each device at once.
//
// A sweep over each process's allocation and free events in its own sequence order, which is
// the order the process saw its memory come and go, so the peak is exact per process. Processes
// are swept separately: two processes sharing a device at the same time are not added up.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// Kinds whose bytes live in a GPU's memory: device, managed (counted on the device it was
// allocated from) and async. Pinned host memory is host RAM and does not count.
bool occupies_device_memory(int kind);

struct DevicePeak {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  int device = 0;  // -1: the device was not known
  std::uint64_t bytes = 0;
  std::int64_t at_ns = 0;    // when the peak was first reached
  std::uint64_t at_seq = 0;  // the allocation event that reached it
};

// One entry per (process, device) that held device memory, by upid then device.
std::vector<DevicePeak> find_device_peaks(const storage::TraceReader& trace);

}  // namespace vramtrace::analysis
