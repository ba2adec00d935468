// The frame every report command runs in: open the trace, run the report, and turn every way
// that can fail into one line on stderr and exit status 2, never an exception trace.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cli/json_object_writer.h"
#include "cli/report_scope.h"
#include "storage/trace_reader.h"

namespace vramtrace::cli {

// Thrown by a report that cannot be made for a reason of the user's (a filter that matches no
// process): run_on_trace() prints what() as the one-line error and returns exit status 2.
class ReportRefusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Opens `path`, calls report(trace), flushes stdout. Returns the command's exit status.
// Errors are printed as "vramtrace <command>: <what went wrong>".
int run_on_trace(std::string_view command, const std::string& path,
                 const std::function<void(const storage::TraceReader&)>& report);

// A report command: `vramtrace NAME FILE` with the report options (report_scope.h: --format
// text|json|csv, --pid, --rank, --host, --device, --kind, --level). Exactly one of the three
// renderers runs, on the opened trace and the scope the options resolve to, and its output
// goes to stdout; the JSON document then gains "filters" (add_filters_json). Work that lasts
// over a second shows a progress line on a terminal's stderr (progress_line.h). The exit
// statuses are run_on_trace()'s, documented in the --help.
struct ReportCommand {
  std::string name;
  std::string description;
  std::function<nlohmann::ordered_json(const std::string& path, const storage::TraceReader&,
                                       const ReportScope&)>
      json;
  std::function<std::string(const std::string& path, const storage::TraceReader&,
                            const ReportScope&)>
      text;
  // Optional: without it, --format csv is refused with a one-line error (exit status 2).
  std::function<std::string(const std::string& path, const storage::TraceReader&,
                            const ReportScope&)>
      csv;
  // Options of this command alone (oom's --top); they write where the renderers read.
  std::function<void(CLI::App*)> add_options;
  // The text shows stacks: the command takes --native (ReportScope::stacks).
  bool shows_stacks = false;
  // Instead of `json`, for a document as large as the trace (one entry per process): writes it
  // a member at a time, with the same text (json_object_writer.h).
  std::function<void(const std::string& path, const storage::TraceReader&, const ReportScope&,
                     JsonObjectWriter&)>
      json_members;
};
void register_report_command(CLI::App& app, int* exit_status, ReportCommand command);

}  // namespace vramtrace::cli
