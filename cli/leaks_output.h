// What `vramtrace leaks` prints: the leak report as text (LeakSanitizer's style), JSON
// (docs/cli.md) and CSV, and --growth's report, from analysis's LeakReport and LeakGrowth.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/reports/leak_growth.h"
#include "analysis/reports/leak_report.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

// The JSON document of docs/cli.md, for the trace named `trace_path`.
nlohmann::ordered_json leak_report_json(const std::string& trace_path,
                                        const analysis::LeakReport& report);
// The LeakSanitizer-style text report. `scope` describes the processes it covers when a filter
// chose them ("only processes matching --rank 3 (1 of 4)"); empty: the whole trace.
std::string leak_report_text(const std::string& trace_path, const analysis::LeakReport& report,
                             const std::string& scope = {},
                             text::StackView stacks = text::StackView::kPythonFirst);
// One row per leak group: kind, level, bytes, count, the innermost frame, the whole stack.
std::string leak_report_csv(const analysis::LeakReport& report);

// --growth's JSON document (docs/cli.md) and text report.
nlohmann::ordered_json leak_growth_json(const std::string& trace_path,
                                        const analysis::LeakGrowth& growth);
std::string leak_growth_text(const std::string& trace_path, const analysis::LeakGrowth& growth,
                             const std::string& scope = {},
                             text::StackView stacks = text::StackView::kPythonFirst);

}  // namespace vramtrace::cli
