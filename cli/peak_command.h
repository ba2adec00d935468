// `vramtrace peak FILE [--format text|json] [--pid N] [--rank N] [--host NAME]`: per process
// and device, the moment of the peak and what was live then, as callsite trees.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/reports/peak_report.h"

namespace vramtrace::cli {

void register_peak_command(CLI::App& app, int* exit_status);

nlohmann::ordered_json peak_report_json(const std::string& trace_path,
                                        const std::vector<analysis::DevicePeakAt>& peaks);
// Both trees, indented, with bytes, share of the peak and count per node; nodes under 1% of the
// peak are folded into one line per parent.
std::string peak_report_text(const std::string& trace_path,
                             const std::vector<analysis::DevicePeakAt>& peaks,
                             const std::string& scope = {});

}  // namespace vramtrace::cli
