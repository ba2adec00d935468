// Why a report over this trace might not tell the whole truth: the collector did not finish, a
// process's ring was not drained, events were lost, times that cannot be right. Every report
// shows these first.
#pragma once

#include <string>
#include <vector>

#include "analysis/process_filter.h"
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

// The sentence of trace_warnings for one time_problem row.
std::string time_problem_warning(const storage::ProcessRecord& process,
                                 const storage::TimeProblem& problem);

}  // namespace vramtrace::analysis
