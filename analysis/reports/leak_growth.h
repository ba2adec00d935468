// Growth across iterations: a leak in progress. At the same point of successive iterations (the
// successive occurrences of one marker: the end of each range so named, or each mark; a name
// "<marker> <n>", as vramtrace.iteration() numbers its ranges, is an occurrence too; with no
// marker named, the marker "iteration" where a process has it, else the ends of the iterations
// of its training loop, found from its backward passes: training_phases.h), the live
// bytes per (allocation stack, kind) at the leak level (leak_report.h); the groups whose live
// bytes never fall from one iteration to the next and still rise over the later half of the
// iterations looked at (in half its steps at least) are growing, by (last - first) /
// (iterations - 1) bytes per iteration. A cache that fills in the first iterations and then
// holds is no leak.
//
// A long run has many thousands of iterations: at most `max_iterations` of them are looked at,
// evenly spaced, the first and last included, and the bytes per iteration are per real
// iteration (divided by the occurrences between the first and last sampled).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/reports/leak_report.h"
#include "analysis/roles/training_phases.h"
#include "analysis/scope/process_filter.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct GrowingGroup {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  LeakGroup group;                    // bytes, count: at the last iteration looked at
  std::vector<std::uint64_t> bytes;   // at each iteration looked at
  std::vector<std::uint64_t> counts;  // allocations, at each iteration looked at
  double bytes_per_iteration = 0;
  // More allocations held at the last iteration looked at than at the first: what iterations
  // made is kept, a leak. Otherwise the same allocations are remade larger each iteration (a
  // batch that grows, a tensor concatenated onto): memory grows, nothing is kept.
  bool kept() const { return !counts.empty() && counts.back() > counts.front(); }
};

// The marker that counts iterations where no marker is named and a process has it.
inline constexpr std::string_view kIterationMarker = "iteration";

struct ProcessIterations {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::optional<int> rank;  // in a distributed job, as the process recorded it
  std::string marker;       // the marker whose occurrences they are; empty: its backward passes
  std::uint64_t iterations = 0;            // occurrences of the marker, or backward passes
  std::vector<std::uint64_t> sampled;      // which (0-based) were looked at
  std::vector<std::uint64_t> sampled_seq;  // and their sequence numbers (where each ended)
};

// "3 iterations of 'iter'", "8 iterations found from its backward passes".
std::string describe_iterations(const ProcessIterations& process);

struct LeakGrowth {
  std::string marker;                        // as asked; empty: found per process (above)
  std::string level;                         // as LeakReport's
  std::vector<ProcessIterations> processes;  // those with at least two occurrences
  // Fastest growing first (bytes per iteration, then upid, callsite, kind).
  std::vector<GrowingGroup> growing;
};

// True when a marker named `name` is an occurrence of `marker`: the same name, or the name
// followed by a space and a number.
bool is_occurrence_of(std::string_view name, std::string_view marker);

// Throws BadMoment when no selected process has two iterations.
// `phases`, where given, is the trace's (a caller that also asks for roles reads the blocks once).
LeakGrowth build_leak_growth(const storage::TraceReader& trace, const storage::TimeIndex& index,
                             const std::string& marker, std::size_t max_iterations,
                             const LeakReportOptions& options = {},
                             TrainingPhases* phases = nullptr);

}  // namespace vramtrace::analysis
