// The frame every report command runs in: open the trace, run the report, and turn every way
// that can fail into one line on stderr and exit status 2, never an exception trace.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "storage/trace_reader.h"

namespace vramtrace::cli {

// Opens `path`, calls report(trace), flushes stdout. Returns the command's exit status.
// Errors are printed as "vramtrace <command>: <what went wrong>".
int run_on_trace(std::string_view command, const std::string& path,
                 const std::function<void(const storage::TraceReader&)>& report);

// A report command: `vramtrace NAME FILE [--format text|json]`. Exactly one of the two
// renderers runs, on the opened trace, and its output goes to stdout; the exit statuses are
// run_on_trace()'s, documented in the command's --help.
struct ReportCommand {
  std::string name;
  std::string description;
  std::function<nlohmann::ordered_json(const std::string& path, const storage::TraceReader&)> json;
  std::function<std::string(const std::string& path, const storage::TraceReader&)> text;
};
void register_report_command(CLI::App& app, int* exit_status, ReportCommand command);

}  // namespace vramtrace::cli
