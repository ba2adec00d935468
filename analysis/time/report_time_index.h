// The trace's time index (storage/time_index.h) as the reports use it: opened (and built on
// first use) with its rollups (storage/live_bytes_rollups.h), and the one rule for when a report
// that can also scan the trace reads the index instead.
#pragma once

#include <memory>

#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// For the reports that need the index (moments, the timeline): opens it, building it on first
// use. Throws storage::TraceError when the trace cannot be indexed.
std::unique_ptr<storage::TimeIndex> open_time_index(const storage::TraceReader& trace);

// For the reports that can either read the index or scan the trace: the index when the trace
// keeps it in its file (storage::TimeIndex::kept_in_file: a finished trace this user can write),
// null otherwise, since building the index aside costs more than one scan. Null: scan.
std::unique_ptr<storage::TimeIndex> open_time_index_if_kept(const storage::TraceReader& trace);

// The one origin of the reports' times: the trace's first allocation, from which `--at +D`
// counts and every "+D" a text report prints is measured (the index's start where it is kept,
// else the earliest allocation the trace holds; 0 in a trace without allocations).
std::int64_t time_origin_ns(const storage::TraceReader& trace);

}  // namespace vramtrace::analysis
