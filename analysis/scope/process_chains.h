// A process as a person means it. Each image a pid runs is recorded as a process row of its own
// (the shim starts again after every exec), so `bash train.sh` that ends in `exec python` is
// two rows, and a pyenv or conda shim adds more. A chain is one pid's images in the order they
// ran; the reports speak of the chains that recorded GPU events and sum up the rest in a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct ProcessChain {
  std::vector<storage::ProcessRecord> images;  // in the order they ran; never empty
  // The image that names the chain: the last one that recorded GPU events, else the last.
  std::size_t named = 0;
  // Some image recorded GPU events (TraceReader::upids_with_gpu_events): these, in order.
  bool gpu = false;
  std::vector<std::int64_t> gpu_images;

  const storage::ProcessRecord& process() const { return images[named]; }
  bool contains(std::int64_t upid) const;
};

// `processes` (any order) as chains, ordered by their first image's start. An image continues
// the chain of the one before it when both have the same host, pid, parent and backend: exec
// keeps all four. How an image ended cannot tell them apart, as the kernel's word on the pid
// may reach the collector before the earlier image's ring is closed. A pid the kernel gave
// again to a later child of the same parent is taken for an exec: reports still count each
// image apart, only the names and the one-line sum-up take them together.
// `gpu_upids`: the upids that recorded GPU events, sorted.
std::vector<ProcessChain> chain_processes(std::vector<storage::ProcessRecord> processes,
                                          const std::vector<std::int64_t>& gpu_upids);

// The chains that recorded GPU events, and how many did not.
struct GpuProcesses {
  std::vector<const ProcessChain*> gpu;
  std::size_t others = 0;
};
GpuProcesses gpu_processes(const std::vector<ProcessChain>& chains);

// "python3.11" for "/usr/bin/python3.11": the name of the executable, for a line that lists
// images.
std::string image_name(const storage::ProcessRecord& image);

// How people name a process: "rank 1 (pid 4781)" in a distributed job, else "pid 4781".
std::string process_label(std::uint32_t pid, std::optional<int> rank);

}  // namespace vramtrace::analysis
