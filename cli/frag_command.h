// `vramtrace frag FILE [--at MOMENT] [--format text|json] [--pid N] [--rank N] [--host NAME]`:
// the caching allocator's segments at a moment, as a map and as fragmentation numbers.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

void register_frag_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
