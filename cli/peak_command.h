// `vramtrace peak FILE [--format text|json] [--pid N] [--rank N] [--host NAME]`: per process
// and device, the moment of the peak and what was live then, as callsite trees.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

void register_peak_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
