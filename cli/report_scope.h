// Which processes a report covers: the `--pid`, `--rank` and `--host` options that every report
// command takes, resolved against the trace to a set of upids.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::cli {

struct ReportScope {
  analysis::ProcessFilter filter;        // as given on the command line; empty: every process
  analysis::ProcessSelection processes;  // the upids it matched; unset: every process
  std::size_t processes_in_trace = 0;

  // "only processes matching --rank 3 (1 of 4)"; empty when there is no filter.
  std::string describe() const;
};

// Adds --pid, --rank and --host to `command`, writing what is given to *filter.
void add_process_filter_options(CLI::App* command, analysis::ProcessFilter* filter);

// Resolves `filter` on `trace`. A filter that matches no process throws ReportRefusal ("no
// process matches --rank 3 in run.db"): a report of nothing would look like a clean bill.
ReportScope resolve_scope(const storage::TraceReader& trace, const std::string& trace_path,
                          const analysis::ProcessFilter& filter);

// The JSON documents' "filters" object, added only when a filter was given: the conditions
// given ("pid", "rank", "host") and the matching processes' "upids".
void add_filters_json(nlohmann::ordered_json* document, const ReportScope& scope);

}  // namespace vramtrace::cli
