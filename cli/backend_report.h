// The summary's section for a `run --backend both` trace (analysis/reports/backend_comparison.h):
// text and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/reports/backend_comparison.h"

namespace vramtrace::cli {

// Empty when the trace is not of both backends.
std::string backend_comparison_text(const analysis::BackendComparison& comparison);
// null when the trace is not of both backends.
nlohmann::ordered_json backend_comparison_json(const analysis::BackendComparison& comparison);

}  // namespace vramtrace::cli
