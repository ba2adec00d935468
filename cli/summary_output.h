// What `vramtrace summary` prints: the text report, the JSON document of docs/cli.md and the
// memory-by-kind CSV, from analysis's Summary (analysis/reports/summary.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/reports/summary.h"
#include "cli/json_object_writer.h"

namespace vramtrace::cli {

// The JSON document of docs/cli.md, for the trace named `trace_path`, a member at a time: its
// processes one entry at a time.
void write_summary_json(const std::string& trace_path, const analysis::Summary& summary,
                        JsonObjectWriter& writer);
// `scope` describes the processes it covers when a filter chose them; empty: the whole trace.
// The processes that recorded no GPU memory are one line, unless `all_processes` or a filter
// chose the processes.
std::string summary_text(const std::string& trace_path, const analysis::Summary& summary,
                         const std::string& scope = {}, bool all_processes = false);

// The memory-by-kind table, one row per kind.
std::string summary_csv(const analysis::Summary& summary);

}  // namespace vramtrace::cli
