// A recorded stack as JSON, innermost frame first: the one shape every report uses, so that
// programs read the stacks of `leaks` and `oom` alike (docs/cli.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::cli {

// {"function": STR ("??" when unknown), "file": STR|null, "line": N|null, "module": STR,
//  "language": "native"|"python"}, and for the mark of a stack cut short (its last entry, with
// the reason in "function") "cut": "cycle"|"too_deep".
// stack_json also marks the frames the text folds by default (text/stack_folding.h):
// "folded": true and "folded_into": the summary of the line they fold into.
nlohmann::ordered_json frame_json(const storage::StackFrame& frame);
nlohmann::ordered_json stack_json(const std::vector<storage::StackFrame>& stack);

}  // namespace vramtrace::cli
