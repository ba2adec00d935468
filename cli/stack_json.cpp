#include "cli/stack_json.h"

#include "text/stack_folding.h"

namespace vramtrace::cli {

using Json = nlohmann::ordered_json;

Json frame_json(const storage::StackFrame& frame) {
  Json out = {
      {"function", frame.function.value_or("??")},
      {"file", frame.file ? Json(*frame.file) : Json(nullptr)},
      {"line", frame.line ? Json(*frame.line) : Json(nullptr)},
      {"module", frame.module},
      {"language", storage::frame_language_name(frame.language)},
  };
  // The mark of a stack cut short (storage::StackFrame::cut): why, in a word.
  if (frame.cut != storage::StackCut::kNone)
    out["cut"] = frame.cut == storage::StackCut::kCycle ? "cycle" : "too_deep";
  return out;
}

Json stack_json(const std::vector<storage::StackFrame>& stack) {
  Json frames = Json::array();
  for (const storage::StackFrame& frame : stack) frames.push_back(frame_json(frame));
  // Every frame stays; those the text folds by default say so, with the line they fold into.
  for (const text::StackLine& line : text::fold_stack(stack)) {
    for (std::size_t i = line.first; line.folded && i <= line.last; ++i) {
      frames[i]["folded"] = true;
      frames[i]["folded_into"] = line.summary;
    }
  }
  return frames;
}

}  // namespace vramtrace::cli
