// What a report covers, as every report command takes it: which processes (`--pid`, `--rank`,
// `--host`), which allocations (`--device`, `--kind`), at which level (`--level`), and in which
// format (`--format`). add_report_options() adds them all to a command in one call;
// resolve_scope() checks them against the trace.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "cli/output_format.h"
#include "storage/trace_reader.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

// The options as given on the command line.
struct ReportOptions {
  OutputFormat format = OutputFormat::kText;
  analysis::ProcessFilter processes;
  std::optional<int> device;
  std::optional<std::string> kind;  // a kind name, as the trace's allocation_kind table has it
  std::optional<analysis::MemoryLevel> level;
  bool native = false;  // --native, on the commands that print stacks
};

// --format, --pid, --rank, --host, --device, --kind and --level, written to *options.
void add_report_options(CLI::App* command, ReportOptions* options);
// --native, for a command that prints stacks: every frame, none folded (text/stack_folding.h).
void add_stack_view_option(CLI::App* command, ReportOptions* options);
// The same but --format, for a command whose output is not a report (export).
void add_scope_options(CLI::App* command, ReportOptions* options);

struct ReportScope {
  analysis::ProcessFilter filter;        // as given on the command line; empty: every process
  analysis::ProcessSelection processes;  // the upids it matched; unset: every process
  std::size_t processes_in_trace = 0;
  analysis::AllocationScope allocations;  // --device and --kind, the kind resolved to its id
  std::optional<std::string> kind_name;
  std::optional<analysis::MemoryLevel> level;              // unset: the command's default (block)
  text::StackView stacks = text::StackView::kPythonFirst;  // how the text shows stacks

  // "only processes matching --rank 3 (1 of 4); only device 0; only kind block"; empty
  // without filters. The level is not a filter: reports say it themselves.
  std::string describe() const;
};

// Adds --pid, --rank and --host to `command`, writing what is given to *filter.
void add_process_filter_options(CLI::App* command, analysis::ProcessFilter* filter);

// Resolves the options on `trace`. A process filter that matches no process, or a kind the
// trace does not name, throws ReportRefusal ("no process matches --rank 3 in run.db"): a
// report of nothing would look like a clean bill.
ReportScope resolve_scope(const storage::TraceReader& trace, const std::string& trace_path,
                          const ReportOptions& options);
ReportScope resolve_scope(const storage::TraceReader& trace, const std::string& trace_path,
                          const analysis::ProcessFilter& filter);

// The JSON documents' "filters" object, added only when a filter was given: the conditions
// given ("pid", "rank", "host", "device", "kind") and, with a process filter, the matching
// processes' "upids".
void add_filters_json(nlohmann::ordered_json* document, const ReportScope& scope);
// The same "filters" object, or nullopt where the scope has no filter.
std::optional<nlohmann::ordered_json> filters_json(const ReportScope& scope);

}  // namespace vramtrace::cli
