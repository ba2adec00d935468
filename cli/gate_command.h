// `vramtrace gate FILE`: the CI leak gate (analysis/gate/gate.h). Exit status 0 when every limit
// holds, 1 when one is broken, 2 for a usage error or a trace that cannot be read.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "analysis/gate/gate.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

inline constexpr int kExitGateFailed = 1;
// Every limit holds on what was recorded, but the recording has gaps (a process stopped
// recording, was not recorded to its end, or events were lost): the gate cannot vouch for what
// it did not see. --accept-data-loss judges what was recorded.
inline constexpr int kExitGateNotVouched = 3;

// Where the gate's reports go besides the text on stdout; empty: not written.
struct GateOutputs {
  std::string junit, json, markdown;
  text::StackView stacks = text::StackView::kPythonFirst;  // in the text forms
};

// Opens the trace (and the baseline, when given), judges it, prints the text report (the JSON
// one with `json`) to `report_to` and writes the files. Returns the exit status above; errors
// are one line on stderr, prefixed with `command`.
int judge_trace(std::string_view command, const std::string& trace_path,
                const analysis::GateOptions& options, const std::string& baseline_path,
                const GateOutputs& outputs, bool json, std::FILE* report_to);

void register_gate_command(CLI::App& app, int* exit_status);

}  // namespace vramtrace::cli
