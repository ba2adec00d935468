// A trace as a timeline for other viewers: the tracks, counters, slices and instants that the
// Perfetto and Chrome exports both write, made by one reading of the trace so that the two files
// always agree, and handed to a sink as they are found: the export never holds the trace's
// events, so its memory does not grow with the trace.
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
//
// The sink hears of every process first; of a thread, a lane or a counter just before its first
// event; then of events process by process, not in time order (a format that wants time order
// sorts them, as the Perfetto export does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct ExportArg {
  std::string name;
  std::variant<std::int64_t, std::string> value;
};

struct ExportProcess {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  // The pid it is shown with: its own, unless two exported processes share it (traces merged
  // from several hosts), then 1000000 + upid, so that tracks never merge.
  std::uint32_t shown_pid = 0;
  std::string name;  // the executable's file name
  std::vector<std::string> argv;
};

struct ExportThread {
  std::int64_t utid = 0, upid = 0;
  std::uint32_t tid = 0;
  std::string name;  // "" when the trace has none
};

struct ExportCounter {
  std::size_t index = 0;  // 0, 1, ... in the order the sink hears of them
  std::int64_t upid = 0;
  int device = 0;
  std::string kind;
  std::string name;  // "device 0 device live bytes"
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

class ExportSink {
 public:
  virtual ~ExportSink() = default;
  virtual void process(const ExportProcess& process) = 0;  // each, before any event
  virtual void thread(const ExportThread& thread) = 0;
  virtual void lane(std::int64_t upid, int lane) = 0;  // lane 1, 2, ... of a process
  virtual void counter(const ExportCounter& counter) = 0;
  virtual void counter_point(const ExportCounter& counter, std::int64_t ns,
                             std::uint64_t bytes) = 0;
  virtual void slice(const ExportSlice& slice) = 0;
  virtual void instant(const ExportInstant& instant) = 0;
};

// What an export held, for its one-line report.
struct ExportCounts {
  std::size_t processes = 0, counters = 0, slices = 0, instants = 0;
};

struct ExportOptions {
  ProcessSelection processes;
  AllocationScope allocations;
  MemoryLevel level = MemoryLevel::kBlock;  // segment: blocks are left out
  bool allocation_instants = true;          // one instant per allocation and free
};

// Reads the trace once, telling `sink` what it finds. Throws storage::TraceError when the trace
// cannot be read, and whatever the sink throws.
ExportCounts export_timeline(const storage::TraceReader& trace, const ExportOptions& options,
                             ExportSink& sink);

}  // namespace vramtrace::analysis
