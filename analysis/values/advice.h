// Advice: a rule that fired on numbers of a trace, the remedy it points to, and those numbers.
//
// Shared by the OOM report (rules on one out-of-memory failure) and the trace advice that
// `summary` shows (rules on the whole trace: its peaks, its cache, its iterations). A rule
// fires only on evidence the trace holds; its evidence lists the numbers it fired on, by name,
// in the order the text uses them, so that a program can check the claim.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct Advice {
  std::string id;  // the rule that fired: one of the kAdvice* names
  std::string text;
  std::vector<std::pair<std::string, std::uint64_t>> evidence;  // in the order written
  std::optional<double> fraction;  // a ratio the rule fired on (fragmentation), also evidence
};

// Rules on one out-of-memory failure (oom_report.h).
inline constexpr const char* kAdviceFragmentation = "fragmentation";
inline constexpr const char* kAdviceCacheHeld = "cache_held";
inline constexpr const char* kAdviceLiveTensors = "live_tensors";
inline constexpr const char* kAdviceTopCallsites = "top_callsites";

// Rules on a whole trace (trace_advice.h), one per known remedy.
inline constexpr const char* kAdviceExpandableSegments = "expandable_segments";
inline constexpr const char* kAdviceEmptyCache = "empty_cache";
inline constexpr const char* kAdviceActivationCheckpointing = "activation_checkpointing";
inline constexpr const char* kAdviceMixedPrecision = "mixed_precision";
inline constexpr const char* kAdviceMicroBatches = "micro_batches";
inline constexpr const char* kAdviceNoGradInEvaluation = "no_grad_in_evaluation";
inline constexpr const char* kAdvicePinnedMemory = "pinned_memory";

// "4.0 MiB": advice text is for people; the exact numbers are in its evidence.
std::string advice_bytes(std::uint64_t bytes);

// "forward (model.py:42)": a stack's first line (callsite_tree.h's first_line_of: the user's
// Python line, else the program's own native frame), as advice names a callsite.
std::string advice_callsite(const std::vector<storage::StackFrame>& stack);

// The remedies for too much live tensor memory, in one wording for every rule that names them.
inline constexpr const char* kReduceLiveTensorsRemedy =
    "smaller micro-batches with gradient accumulation, activation checkpointing "
    "(torch.utils.checkpoint), mixed precision (torch.autocast), torch.no_grad() in "
    "evaluation, and no references kept to tensors no longer needed (a loss kept in a list "
    "keeps its graph)";

}  // namespace vramtrace::analysis
