// One process of a trace as PyTorch's memory snapshot: the dictionary that
// torch.cuda.memory._snapshot() returns and _dump_snapshot() pickles, which pytorch.org/memory_viz
// and torch.cuda._memory_viz (segsum, trace_plot, segment_plot, ...) read.
//
//   {"segments": [segment, ...], "device_traces": [[entry, ...] per device ordinal]}
//
// - segments: the caching allocator's segments at the end of the process's program (the moment
//   `frag` calls `end`), laid out by lay_out_segments() as `frag` lays them out; each
//   {device, address, total_size, allocated_size, active_size, requested_size, stream,
//   segment_type, segment_pool_id (0, 0), is_expandable, frames, blocks}, its blocks
//   {address, size, requested_size, state ("active_allocated" or "inactive"), frames} in
//   address order, their sizes adding up to total_size.
// - device_traces: per device, the allocator's events up to that moment in sequence order:
//   "alloc", "free_requested" and "free_completed" (both at a block's free), "segment_alloc" and
//   "segment_free" (cudaMalloc'd segments), "segment_map" and "segment_unmap" (the mappings of
//   expandable segments), "oom" (a failed block); each {action, addr (oom: device_free), size,
//   stream, frames, time_us}.
// - frames: the stack innermost first, Python and native frames alike, as
//   {filename, line, name}.
//
// A process without allocator events has no blocks in the trace: each of its live allocations
// of device memory is a segment holding one active block of its whole size, and its
// device_traces have a segment_alloc and an alloc per allocation, a free_requested,
// free_completed and segment_free per free. docs/cli.md says what the trace cannot tell
// (device_free, pending frees, the segment's pool).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "analysis/scope/process_filter.h"
#include "analysis/time/moment.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct MemoryVizOptions {
  ProcessSelection processes;
  std::optional<int> device;  // only this device's segments and events
};

struct MemoryVizBlock {
  std::uint64_t address = 0, size = 0;
  std::uint64_t requested = 0;  // active blocks: the request, where known, else the size
  bool active = false;
  std::optional<std::int64_t> callsite;
};

struct MemoryVizSegment {
  int device = 0;
  std::uint64_t address = 0, size = 0, stream = 0;
  std::string_view type;  // "small" or "large"
  bool expandable = false;
  std::optional<std::int64_t> callsite;
  std::vector<MemoryVizBlock> blocks;  // address order, covering the segment
};

enum class MemoryVizAction : std::uint8_t {
  // In this order when one event makes several entries.
  kSegmentAlloc,
  kSegmentMap,
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentFree,
  kSegmentUnmap,
  kOom,
};

// The snapshot's segments, and what its device traces are made of when it is written: those
// are read from the trace then, one event at a time, so that a process of millions of
// allocations is written in bounded memory.
struct MemoryVizSnapshot {
  ProcessMoment at;
  bool allocator_events = false;
  std::vector<MemoryVizSegment> segments;  // (device, address) order
  // The allocations that are the allocator's segments (their rows make segment_* entries).
  std::unordered_set<std::int64_t> segment_ids;
  std::optional<int> device;  // only this device's events
  int devices = 1;            // device_traces has this many lists
  std::size_t active_blocks() const;
};

// The snapshot of the one process the selection leaves (the only one selected, else the only
// one with allocator events). Throws BadMoment, one line naming --pid, when that leaves
// several; storage::TraceError when the trace cannot be read.
MemoryVizSnapshot build_memory_viz(const storage::TraceReader& trace,
                                   const MemoryVizOptions& options);

// The pickle, its device traces and stacks read from `trace`; returns how many trace entries
// it wrote. The stream is the caller's to check.
std::size_t write_memory_viz(const storage::TraceReader& trace, const MemoryVizSnapshot& snapshot,
                             std::ostream& out);

// "segment_alloc", "alloc", ...
std::string_view memory_viz_action_name(MemoryVizAction action);

}  // namespace vramtrace::analysis
