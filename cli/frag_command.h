// `vramtrace frag FILE [--at MOMENT] [--format text|json] [--pid N] [--rank N] [--host NAME]`:
// the caching allocator's segments at a moment, as a map and as fragmentation numbers.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/allocator/fragmentation.h"

namespace vramtrace::cli {

void register_frag_command(CLI::App& app, int* exit_status);

// The JSON contract of docs/cli.md (issue 6's, then the extra keys after it).
nlohmann::ordered_json fragmentation_json(const analysis::FragmentationReport& report);
// One row per segment, a character per slice: '#' used, '.' free, '+' both.
std::string fragmentation_text(const std::string& trace_path,
                               const analysis::FragmentationReport& report);

}  // namespace vramtrace::cli
