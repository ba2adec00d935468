// `vramtrace merge TRACE... -o OUTPUT [--force]`: the traces of one job, recorded on several
// nodes (one `vramtrace run` per node), made into one trace for the reports and the viewer.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `merge` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_merge_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
