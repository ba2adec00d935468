// `vramtrace timeline FILE [--buckets N] [--format text|json] [--pid N] [--rank N]
// [--host NAME]`: live bytes over time per process, device and kind, as a chart in the
// terminal or as min/max/last per bucket.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/time/timeline.h"

namespace vramtrace::cli {

void register_timeline_command(CLI::App& app, int* exit_status);

nlohmann::ordered_json timeline_json(const std::string& trace_path,
                                     const analysis::Timeline& timeline);
// One chart per series: the max of each bucket, scaled to the series' peak.
std::string timeline_text(const std::string& trace_path, const analysis::Timeline& timeline,
                          const std::string& scope = {});

}  // namespace vramtrace::cli
