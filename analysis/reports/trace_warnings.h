// Why a report over this trace might not tell the whole truth: the collector did not finish, a
// process's ring was not drained, events were lost, times that cannot be right. Every report
// shows these first.
#pragma once

#include <string>
#include <vector>

#include "analysis/scope/process_filter.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// One sentence each, in this order: the trace as a whole (its damaged fields included), then the
// selected processes by upid (each process's times that cannot be right after the others: the time
// index's time_problem), then stats of severity data_loss or error by name (stats count for the
// whole trace: they cannot be told apart by process). The time problems come from `index`, or where
// it is null from the index the trace keeps in its file (open_time_index_if_kept); a trace that
// keeps none is not indexed for them.
std::vector<std::string> trace_warnings(const storage::TraceReader& trace,
                                        const ProcessSelection& processes = std::nullopt,
                                        const storage::TimeIndex* index = nullptr);

// What the recording did not see, one sentence each: a subset of trace_warnings. The trace not
// finished by its collector, each selected process not recorded to its end (it stopped
// recording, its ring was corrupt, or it still ran when the recording ended), and each stat of
// severity data_loss that loses events rather than only their stacks. Empty when every event of
// the selected processes is in the trace: a leak, a peak or a growth it reports is then all there
// was. The gate refuses to vouch for a trace with gaps.
std::vector<std::string> recording_gaps(const storage::TraceReader& trace,
                                        const ProcessSelection& processes = std::nullopt);

// The sentence of trace_warnings for one time_problem row.
std::string time_problem_warning(const storage::ProcessRecord& process,
                                 const storage::TimeProblem& problem);

}  // namespace vramtrace::analysis
