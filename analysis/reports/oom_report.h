// Out-of-memory forensics: for every allocation that failed for lack of memory (result 2:
// cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY, or a failed `block` row from
// c10::reportOutOfMemoryToProfiler), what was live at that moment, how the caching allocator's
// segments were used, and the advice that the numbers support.
//
// "Live at the OOM" is exact because a process's events share one sequence: an allocation of
// the same process with alloc_seq < oom seq and no free before it (free_seq NULL or > oom seq).
// As in the leak report, at the block level (a process with allocator events) the allocator's
// segments are not listed as live allocations: their bytes are described in `allocator`, as
// live blocks (tensors), free gaps and cache.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/allocator/allocator_state.h"
#include "analysis/roles/block_roles.h"
#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "analysis/values/advice.h"
#include "analysis/values/cuda_errors.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct LiveGroup {  // live allocations of one (stack, kind), as a leak group
  std::optional<std::int64_t> callsite_id;
  int kind = 0;
  std::string kind_name;
  std::uint64_t bytes = 0, count = 0;
  std::vector<storage::StackFrame> stack;  // innermost first
  // Blocks of a PyTorch process: the role (block_roles.h) of most of their bytes.
  std::optional<BlockRole> role;
};

struct LiveAtOom {
  std::uint64_t total_bytes = 0, total_count = 0;
  std::map<std::string, std::uint64_t> bytes_by_kind;  // kind name -> bytes
  std::vector<LiveGroup> top;  // largest first (bytes, count, callsite, kind), at most `top`
  std::uint64_t groups = 0;    // groups before the cut to `top`
};

// The allocator at the OOM (allocator_state.h); the names keep the report's vocabulary.
using SegmentAtOom = SegmentState;
using AllocatorAtOom = AllocatorState;

// What became of a failure: what the program saw of it.
enum class OomOutcome {
  kReturned,   // the error went back to the program (the call was not PyTorch's allocator's)
  kRaised,     // PyTorch's allocator gave up: torch.OutOfMemoryError was raised
  kRetried,    // a device allocation of PyTorch's allocator that failed on the way to a raised
               // one: the allocator freed its cache and tried again, in vain
  kRecovered,  // a device allocation of PyTorch's allocator that failed, and the allocator went
               // on (it freed its cache and the next try succeeded): the program saw nothing
};

// "raised", "retried", "recovered", "returned".
std::string_view oom_outcome_name(OomOutcome outcome);

struct OomRecord {
  OomOutcome outcome = OomOutcome::kReturned;
  std::optional<std::size_t> raised;  // kRetried: the index of the raised one in the report
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::optional<int> rank;  // in a distributed job
  std::optional<std::uint32_t> tid;
  std::int64_t time_ns = 0;
  std::int64_t time_origin_ns = 0;  // the trace's (time_index.h): "+D" counts from it
  std::uint64_t seq = 0;
  int api = 0, kind = 0, result = 0, device = 0;
  std::string api_name, kind_name;
  std::uint64_t requested_bytes = 0;  // the row's size: what the allocator asked for, rounded
  std::vector<storage::StackFrame> stack;
  // Made in a backward pass, on autograd's own thread (whose stacks have no Python line): the
  // user's line of the backward() call it ran under, the latest that made a tensor before it.
  std::optional<storage::StackFrame> backward_call;
  // The device's free and total bytes right after the failure (cuMemGetInfo), where the trace
  // recorded them: the numbers torch's OutOfMemoryError message starts with.
  std::optional<storage::DeviceMemoryRow> device_memory;
  LiveAtOom live;
  std::optional<AllocatorAtOom> allocator;  // set for a process with allocator events
  std::vector<Advice> advice;
};

struct OomReportOptions {
  ProcessSelection processes;
  std::size_t top = 10;  // live groups listed per OOM
  // Only OOMs of these allocations (device, kind), and only these live beside them.
  AllocationScope allocations;
  // The segment level leaves blocks out: the allocator's own OOM reports, its live blocks and
  // its state; its segments are then listed as live allocations.
  MemoryLevel level = MemoryLevel::kBlock;
};

// Only the failures, without what was live then (cheap: one query of failed allocations), for
// those who mark them on a timeline: the allocations with kOutOfMemoryResult of the selected
// processes, in (upid, seq) order.
std::vector<storage::AllocationRecord> find_out_of_memory_failures(
    const storage::TraceReader& trace, const ProcessSelection& processes = std::nullopt);

// Whether a stack is a call of PyTorch's CUDA caching allocator (a frame of libc10_cuda).
bool made_by_torch_allocator(const std::vector<storage::StackFrame>& stack);

// In (upid, seq) order.
std::vector<OomRecord> build_oom_report(const storage::TraceReader& trace,
                                        const OomReportOptions& options = {});

}  // namespace vramtrace::analysis
