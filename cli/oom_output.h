// What `vramtrace oom` prints: the first screen of the failures the program saw, every failure
// with --all, JSON (docs/cli.md) and CSV, from analysis's OomRecords.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/reports/oom_report.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

// The JSON document of docs/cli.md, for the trace named `trace_path`.
nlohmann::ordered_json oom_report_json(const std::string& trace_path,
                                       const std::vector<analysis::OomRecord>& ooms);
// The failures the program saw, each on a screen: the one that raised first, torch's own
// numbers, what was live by the user's line, the allocator's gaps and the advice; the failures
// inside PyTorch's allocator a line each. `scope` as in leak_report_text().
std::string oom_brief_text(const std::string& trace_path,
                           const std::vector<analysis::OomRecord>& ooms,
                           const std::string& scope = {});
// `--all`: one section per failure, whole stacks and every segment.
std::string oom_report_text(const std::string& trace_path,
                            const std::vector<analysis::OomRecord>& ooms,
                            const std::string& scope = {},
                            text::StackView stacks = text::StackView::kPythonFirst);

// One row per OOM: who, when, what was asked, how much was live, and the advice's ids.
std::string oom_report_csv(const std::vector<analysis::OomRecord>& ooms);

}  // namespace vramtrace::cli
