// What `vramtrace peak` prints: each peak with what was live then as callsite trees, as text,
// JSON (docs/cli.md) and CSV.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/reports/peak_report.h"

namespace vramtrace::cli {

// The JSON document of docs/cli.md.
nlohmann::ordered_json peak_report_json(const std::string& trace_path,
                                        const std::vector<analysis::DevicePeakAt>& peaks);
// Both trees, indented, with bytes, share of the peak and count per node; nodes under 1% of the
// peak are folded into one line per parent.
std::string peak_report_text(const std::string& trace_path,
                             const std::vector<analysis::DevicePeakAt>& peaks,
                             const std::string& scope = {});
// One row per peak and allocating frame (the bottom-up tree's first level).
std::string peak_report_csv(const std::vector<analysis::DevicePeakAt>& peaks);

}  // namespace vramtrace::cli
