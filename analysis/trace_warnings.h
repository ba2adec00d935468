// Why a report over this trace might not tell the whole truth: the collector did not finish, a
// process's ring was not drained, events were lost. Every report shows these first.
#pragma once

#include <string>
#include <vector>

#include "analysis/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// One sentence each, in this order: the trace as a whole (its damaged fields included), then the
// selected processes by upid, then stats of severity data_loss or error by name (stats count for
// the whole trace: they cannot be told apart by process).
std::vector<std::string> trace_warnings(const storage::TraceReader& trace,
                                        const ProcessSelection& processes = std::nullopt);

}  // namespace vramtrace::analysis
