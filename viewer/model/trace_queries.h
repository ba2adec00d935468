// The questions the viewer asks of a trace, each answered by analysis/ exactly as the CLI
// answers it, so that a view and its command always show the same numbers:
//   overview             `vramtrace timeline` (at full resolution) and markers
//   OOM flags            `vramtrace oom`'s failures, without what was live then
//   leaks, no range      `vramtrace leaks`
//   leaks of a range     `vramtrace leaks --between T0 T1`: allocated in (T0, T1], live at T1
//   live at a time       `vramtrace leaks --at T` (hovering shows its top callsites)
//   live at the peak     `vramtrace leaks --at peak`: each process at its device memory peak
//   fragmentation        `vramtrace frag --at MOMENT --pid P`
//   summary              `vramtrace summary`
// Times are CLOCK_MONOTONIC ns, as the JSON reports give them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/allocator/fragmentation.h"
#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/time/moment.h"
#include "analysis/time/timeline.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::viewer {

struct TimeRange {
  std::int64_t from_ns = 0, to_ns = 0;  // from <= to
};

// An NVTX or API marker: a range drawn as a band, a mark as a line.
struct TimelineMarker {
  std::string name;
  std::uint32_t pid = 0;
  bool range = false;
  std::int64_t start_ns = 0, end_ns = 0;  // a mark: equal; a range never ended: the trace's end
  int depth = 0;
  std::optional<std::uint32_t> color;  // ARGB
};

// An out-of-memory failure, drawn as a flag.
struct OomFlag {
  std::uint32_t pid = 0;
  std::int64_t upid = 0;
  std::int64_t time_ns = 0;
  int device = 0;
  std::uint64_t requested_bytes = 0;
  std::string kind_name;
};

// A process the fragmentation map can show.
struct MapProcess {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::string name;               // the executable's (analysis::image_name): "python3.11"
  bool allocator_events = false;  // else its map has no segments, only raw allocations
  std::vector<int> devices;       // that its timeline has series of, ascending
};

// What the first picture needs: cheap on any trace, since the timeline reads the time index's
// rollups and markers are a small table. (OOM failures are not: finding them reads every
// allocation row, so they come in a later stage.)
struct TraceOverview {
  std::string path;
  bool complete = true;    // meta complete: false while `vramtrace run` still writes it
  std::string index_note;  // how the time index was made, when not kept in the file
  analysis::Timeline timeline;
  std::vector<TimelineMarker> markers;  // by start
  // The process the fragmentation map shows first: the one whose device memory peaked highest
  // among processes with allocator events (any, when none has them); unset in an empty trace.
  std::optional<std::int64_t> map_upid;
  std::uint32_t map_pid = 0;
  // The processes a person means (analysis/scope/process_chains.h): the images of the chains that
  // recorded GPU memory, each named by its own pid and executable, by upid; every process when
  // none did. `other_processes`: the chains left out, which recorded nothing of the GPU (a
  // job started through a shell records dozens).
  std::vector<MapProcess> processes;
  std::size_t other_processes = 0;
};

TraceOverview load_overview(const storage::TraceReader& trace, const storage::TimeIndex& index);

// By time.
std::vector<OomFlag> find_oom_flags(const storage::TraceReader& trace);

// Leaks of the whole trace (no range) or of a range, as above.
analysis::LeakReport leaks_in(const storage::TraceReader& trace, const storage::TimeIndex& index,
                              const std::optional<TimeRange>& range);

// What the leak tree shows: the leaks (of the whole trace or of the selected range), or what was
// live at the peak.
enum class TreeSubject { kLeaks, kLiveAtPeak };

analysis::LeakReport live_at_peak(const storage::TraceReader& trace,
                                  const storage::TimeIndex& index);

// What was live at `ns`, as leak groups (largest first), at most `top` of them.
std::vector<analysis::LeakGroup> live_at(const storage::TraceReader& trace,
                                         const storage::TimeIndex& index, std::int64_t ns,
                                         std::size_t top);

// One process's segments at a moment (analysis::BadMoment when it has no such moment), of one
// device or (unset) all of them: `frag --at MOMENT --pid P [--device D]`.
analysis::FragmentationReport fragmentation_at(const storage::TraceReader& trace,
                                               const storage::TimeIndex& index,
                                               const analysis::MomentSpec& moment,
                                               std::int64_t upid,
                                               std::optional<int> device = std::nullopt);

// A moment at a time, as `--at NS` gives it.
analysis::MomentSpec moment_at(std::int64_t ns);

}  // namespace vramtrace::viewer
