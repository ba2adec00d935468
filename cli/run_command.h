// `vramtrace run`: records a program's GPU allocations into a trace.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `run` subcommand to `app`. When the subcommand runs, its exit status (the traced
// program's own, or 2 for a usage or trace error) is written to *exit_status.
void register_run_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
