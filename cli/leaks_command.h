// `vramtrace leaks FILE [--at MOMENT | --between M1 M2 | --growth MARKER] [--level L]
// [--format text|json] [--pid N] [--rank N] [--host NAME]`: what was never freed (or was live
// at a moment, or grows from iteration to iteration), and where.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `leaks` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_leaks_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
