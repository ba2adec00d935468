// What `vramtrace frag` prints: each device's segments as a map, with the fragmentation
// figures, as text, JSON (docs/cli.md) and CSV.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/allocator/fragmentation.h"

namespace vramtrace::cli {

// The JSON contract of docs/cli.md.
nlohmann::ordered_json fragmentation_json(const analysis::FragmentationReport& report);
// One row per segment, a character per slice: '#' used, '.' free, '+' both.
std::string fragmentation_text(const std::string& trace_path,
                               const analysis::FragmentationReport& report);
// One row per block of each segment, in address order.
std::string fragmentation_csv(const analysis::FragmentationReport& report);

}  // namespace vramtrace::cli
