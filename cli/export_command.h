// `vramtrace export FILE --perfetto OUT --chrome OUT.json --memory-viz OUT.pickle` with the
// scope options (report_scope.h): the trace as a timeline for Perfetto's UI and
// chrome://tracing, and one process as PyTorch's memory snapshot (analysis/export/).
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `export` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_export_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
