// `vramtrace summary FILE` with the report options (report_scope.h): who ran, for how long,
// what each kind of memory did, and the advice the trace supports.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `summary` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_summary_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
