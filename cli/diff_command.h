// `vramtrace diff A B` with the report options (report_scope.h): per callsite, how the peak and
// the leaked bytes changed from trace A (before) to trace B (after), regressions first.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/reports/trace_diff.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

// Adds the `diff` subcommand to `app`; when it runs, its exit status goes to *exit_status.
void register_diff_command(CLI::App& app, int* exit_status);

// The JSON document of docs/cli.md.
nlohmann::ordered_json trace_diff_json(const std::string& path_a, const std::string& path_b,
                                       const analysis::TraceDiff& diff);
std::string trace_diff_text(const std::string& path_a, const std::string& path_b,
                            const analysis::TraceDiff& diff, const std::string& scope = {},
                            text::StackView stacks = text::StackView::kPythonFirst);
// One row per changed group.
std::string trace_diff_csv(const analysis::TraceDiff& diff);

}  // namespace vramtrace::cli
