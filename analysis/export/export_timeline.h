// A trace as a timeline for other viewers: the tracks, counters, slices and instants that the
// Perfetto and Chrome exports both write, built once so that the two files always agree.
//
// - Tracks: one per process, one per thread that made an event, and one per (process, device,
//   kind) counter of live bytes.
// - Counters: live bytes of each kind on each device, after every allocation and free of the
//   process, in its own sequence order; a first point at 0 where the counter starts.
// - Slices: marker ranges, on the thread that began them. Ranges that do not nest (a start/end
//   range overlapping another) go to a lane of their own under the process, so that every
//   track's slices nest, as both formats require. A range never ended runs to the trace's end;
//   a range of no duration is an instant.
// - Instants: marks (on their thread), every allocation and free (on its thread, named "alloc
//   device 4.0 MiB" with its address, size and callsite), and every out-of-memory failure (on
//   the process track).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/allocation_scope.h"
#include "analysis/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct ExportArg {
  std::string name;
  std::variant<std::int64_t, std::string> value;
};

struct ExportProcess {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::string name;  // the executable's file name
  std::vector<std::string> argv;
  int lanes = 0;  // extra lanes for ranges that do not nest (lane 1..lanes)
};

struct ExportThread {
  std::int64_t utid = 0, upid = 0;
  std::uint32_t tid = 0;
  std::string name;  // "" when the trace has none
};

struct CounterPoint {
  std::int64_t ns = 0;
  std::uint64_t bytes = 0;
};

struct ExportCounter {
  std::int64_t upid = 0;
  int device = 0;
  std::string kind;
  std::string name;                  // "device 0 device live bytes"
  std::vector<CounterPoint> points;  // time order
};

// Where a slice or an instant is drawn.
struct ExportPlace {
  std::int64_t upid = 0;
  std::optional<std::int64_t> utid;  // unset: the process track (or a lane of it)
  int lane = 0;                      // > 0: the process's lane of that number
};

struct ExportSlice {
  ExportPlace place;
  std::string name, category;
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<ExportArg> args;
};

struct ExportInstant {
  ExportPlace place;
  std::string name, category;  // category: "alloc", "free", "mark", "range", "oom"
  std::int64_t ns = 0;
  std::vector<ExportArg> args;
};

struct ExportTimeline {
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<ExportProcess> processes;  // by upid
  std::vector<ExportThread> threads;     // by utid; only threads with an event
  std::vector<ExportCounter> counters;   // by upid, device, kind
  std::vector<ExportSlice> slices;       // by start
  std::vector<ExportInstant> instants;   // by time
};

struct ExportOptions {
  ProcessSelection processes;
  AllocationScope allocations;
  MemoryLevel level = MemoryLevel::kBlock;  // segment: blocks are left out
  bool allocation_instants = true;          // one instant per allocation and free
};

ExportTimeline build_export_timeline(const storage::TraceReader& trace,
                                     const ExportOptions& options = {});

}  // namespace vramtrace::analysis
