// What `vramtrace gate` writes: the text for the job's log, and the files CI systems read
// (JUnit XML for test tabs, JSON for programs, Markdown for job summaries).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/gate/gate.h"
#include "text/stack_text.h"

namespace vramtrace::cli {

// The text forms show the leaks' stacks as `stacks` says (text/stack_text.h).
std::string gate_text(const std::string& trace_path, const analysis::GateResult& result,
                      text::StackView stacks = text::StackView::kPythonFirst);
nlohmann::ordered_json gate_json(const std::string& trace_path, const analysis::GateResult& result);
// One <testcase> per check; a broken limit is a <failure> whose text holds the leaks' stacks.
std::string gate_junit(const std::string& trace_path, const analysis::GateResult& result,
                       text::StackView stacks = text::StackView::kPythonFirst);
std::string gate_markdown(const std::string& trace_path, const analysis::GateResult& result,
                          text::StackView stacks = text::StackView::kPythonFirst);

}  // namespace vramtrace::cli
