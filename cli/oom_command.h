// `vramtrace oom FILE [--format text|json] [--top N] [--pid N] [--rank N] [--host NAME]`: every
// allocation that failed for lack of memory, what was live then, how the allocator's segments
// were used, and what to do about it.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// Adds the `oom` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_oom_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
