// Advice as the reports print it: one JSON object per advice, and the text lines, the same in
// `summary` (the trace's advice) and `oom` (each failure's).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/values/advice.h"

namespace vramtrace::cli {

// {"id", "text", "evidence": {name: number, ..., "external_fragmentation": ratio if any}}
nlohmann::ordered_json advice_json(const analysis::Advice& advice);
nlohmann::ordered_json advice_json(const std::vector<analysis::Advice>& advice);

// "<indent>[id] text\n" per advice.
std::string advice_text(const std::vector<analysis::Advice>& advice, std::string_view indent);

}  // namespace vramtrace::cli
