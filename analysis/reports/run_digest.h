// What a recording holds, in the few numbers a person wants at the end of a job's log (what
// `vramtrace run` says last): which processes used the GPU and, for each, its peak, what it
// still held when its program ended and where most of that was made, and its out-of-memory
// failures. Read from the time index the run just completed, so its cost follows the
// processes and what was live at the end, not the length of the trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/roles/block_roles.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct ProcessDigest {
  storage::ProcessRecord process;  // the image that names it (process_chains.h)
  bool allocator_events = false;   // the leaks below are blocks (tensors)
  // The device with the most device memory in use at once, and that peak; with allocator
  // events also the most bytes in live blocks on it. Unset: no device memory was used.
  std::optional<int> peak_device;
  std::uint64_t peak_bytes = 0, peak_block_bytes = 0;
  // Live at the program's end, at the block level (as `leaks` reports by default), and the
  // largest group's share and stack.
  std::uint64_t leaked_bytes = 0, leaked_count = 0;
  std::uint64_t top_leak_bytes = 0;
  std::vector<storage::StackFrame> top_leak_stack;  // innermost first; empty: no stack or leak
  // A training process (it has iterations: the marker "iteration", or backward passes): a leak
  // is what grows from one iteration to the next (leak_growth.h), and what it holds at its end
  // is told by role (block_roles.h); the leaks above are then those growing stacks, their
  // bytes live at its end.
  std::uint64_t iterations = 0;  // 0: not a training process
  std::string iteration_marker;  // the marker that counted them; empty: the backward passes
  // The stacks that grow and keep what they made (leak_growth.h's kept()): leaks.
  double growth_per_iteration = 0;                    // summed over them
  std::vector<storage::StackFrame> top_growth_stack;  // the fastest's; empty: none
  double top_growth_per_iteration = 0;
  // The stacks that grow by remaking their allocations larger, keeping none.
  double larger_per_iteration = 0;                    // summed over them
  std::vector<storage::StackFrame> top_larger_stack;  // the fastest's; empty: none
  std::uint64_t top_larger_count = 0;                 // its allocations at the end
  std::optional<RoleTotals> held;                     // at its end, by role
  std::uint64_t out_of_memory = 0;  // failed allocations that returned out of memory
  // Of those, the reports of PyTorch's allocator: each a torch.OutOfMemoryError raised (its
  // other failures are the device allocations it failed on the way, or went past).
  std::uint64_t torch_out_of_memory = 0;
  // What CUDA libraries held for themselves at its end (library_memory.h): no leak.
  std::uint64_t library_bytes = 0;
  std::vector<std::string> libraries;  // their file names, most bytes first
};

struct RunDigest {
  std::size_t processes = 0;       // as people count them: one per pid's exec chain
  std::vector<ProcessDigest> gpu;  // those that recorded GPU events, in order of start
  // What the recording did not see (trace_warnings.h, recording_gaps()): where not empty, a
  // process's "nothing leaked" speaks only for what was recorded.
  std::vector<std::string> gaps;
};

RunDigest digest_run(const storage::TraceReader& trace, const storage::TimeIndex& index);

}  // namespace vramtrace::analysis
