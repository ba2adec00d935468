#include "text/stack_folding.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace vramtrace::text {
namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

// The name of the Python-visible function a libtorch_python frame implements
// (torch::autograd::THPVariable_add -> "add"); empty for any other frame.
std::string_view python_binding_name(std::string_view function) {
  constexpr std::string_view kPrefix = "THPVariable_";
  const std::size_t at = function.find(kPrefix);
  if (at == std::string_view::npos) return {};
  std::string_view name = function.substr(at + kPrefix.size());
  const std::size_t end = name.find_first_of("(<>");
  return end == std::string_view::npos ? name : name.substr(0, end);
}

// The X of "at::_ops::X::call(...)" or "...::redispatch(...)"; empty for any other frame.
std::string_view ops_struct(std::string_view function) {
  constexpr std::string_view kPrefix = "at::_ops::";
  const std::size_t at = function.find(kPrefix);
  if (at == std::string_view::npos) return {};
  std::string_view rest = function.substr(at + kPrefix.size());
  const std::size_t end = rest.find("::");
  if (end == std::string_view::npos) return {};
  return rest.substr(0, end);
}

// An overload's name as torch's code generator appends it to the operator's (add_Tensor,
// empty_memory_format, sum_dim_IntList): a part that starts with a capital, or one of the
// lower-case overload names torch uses most. Two parts at most, never the whole name.
std::string_view without_overload(std::string_view name) {
  constexpr std::array<std::string_view, 14> kLowerCase{
      "memory_format", "out",         "int",     "dim",          "names", "self",   "correction",
      "using_ints",    "using_sizes", "dimname", "dtype_layout", "dtype", "device", "other"};
  for (int parts = 0; parts < 2; ++parts) {
    std::string_view stripped = name;
    for (std::string_view overload : kLowerCase) {
      if (name.size() > overload.size() + 1 && name.ends_with(overload) &&
          name[name.size() - overload.size() - 1] == '_')
        stripped = name.substr(0, name.size() - overload.size() - 1);
    }
    const std::size_t last = name.rfind('_');
    if (stripped == name && last != std::string_view::npos && last > 0 && last + 1 < name.size() &&
        name[last + 1] >= 'A' && name[last + 1] <= 'Z')
      stripped = name.substr(0, last);
    if (stripped == name) break;
    name = stripped;
  }
  return name;
}

bool folds(const std::vector<storage::StackFrame>& stack, std::size_t i,
           std::size_t outermost_python) {
  const storage::StackFrame& frame = stack[i];
  if (i == 0 || frame.cut != storage::StackCut::kNone) return false;
  // Outside the outermost Python frame: the interpreter's start-up, native by definition.
  if (i > outermost_python) return true;
  return fold_class(frame) != FoldClass::kNone;
}

std::string run_summary(const std::vector<storage::StackFrame>& stack, std::size_t first,
                        std::size_t last) {
  std::vector<std::string> places;
  // The outermost dispatch frame is the operator the caller asked for (inner ones are what it
  // was made of). The binding's name, where the run has one, tells the operator's name from
  // its overload's: THPVariable_add over at::_ops::add_Tensor is aten::add.
  std::string_view ops, binding;
  for (std::size_t i = first; i <= last; ++i) {
    const storage::StackFrame& frame = stack[i];
    std::string place =
        frame.language == storage::FrameLanguage::kPython
            ? std::string("nn.Module.__call__")
            : std::string(storage::path_base_name(frame.module.empty() ? "??" : frame.module));
    if (std::find(places.begin(), places.end(), place) == places.end())
      places.push_back(std::move(place));
    if (!frame.function) continue;
    if (const std::string_view name = python_binding_name(*frame.function); !name.empty())
      binding = name;
    if (const std::string_view name = ops_struct(*frame.function); !name.empty()) ops = name;
  }
  std::string op;
  if (!ops.empty()) {
    const bool binding_names_it = !binding.empty() && ops.starts_with(binding) &&
                                  (ops.size() == binding.size() || ops[binding.size()] == '_');
    op = "aten::" + std::string(binding_names_it ? binding : without_overload(ops)) + ": ";
  }
  const std::size_t count = last - first + 1;
  return fmt::format("{}{} {} in {}", op, count, count == 1 ? "frame" : "frames",
                     fmt::join(places, ", "));
}

// A frame of the way into main() or into a thread's function: the C library's start
// (`_start`, `__libc_start_main`), its thread start and clone, libstdc++'s thread routine and
// std::thread's invoke chain.
bool starts_process_or_thread(const storage::StackFrame& frame) {
  if (frame.cut != storage::StackCut::kNone || frame.language != storage::FrameLanguage::kNative)
    return false;
  const std::string_view function = frame.function ? std::string_view(*frame.function) : "??";
  constexpr std::array<std::string_view, 10> kStarts{"_start",
                                                     "__libc_start_main",
                                                     "__libc_start_main_impl",
                                                     "__libc_start_call_main",
                                                     "start_thread",
                                                     "clone",
                                                     "__clone",
                                                     "clone3",
                                                     "__clone3",
                                                     "execute_native_thread_routine"};
  if (std::find(kStarts.begin(), kStarts.end(), function) != kStarts.end()) return true;
  if (function.find("std::thread::_State_impl<") != std::string_view::npos ||
      function.find("std::thread::_Invoker<") != std::string_view::npos ||
      function.find("std::__invoke") != std::string_view::npos)
    return true;
  return function == "??" && storage::path_base_name(frame.module).starts_with("libstdc++.so");
}

// Where the outermost run of such frames begins, when it is two frames or more and not the
// allocation site; else the stack's size.
std::size_t start_up_run(const std::vector<storage::StackFrame>& stack) {
  std::size_t first = stack.size();
  while (first > 1 && starts_process_or_thread(stack[first - 1])) --first;
  return stack.size() - first >= 2 ? first : stack.size();
}

}  // namespace

FoldClass fold_class(const storage::StackFrame& frame) {
  if (frame.cut != storage::StackCut::kNone) return FoldClass::kNone;
  if (frame.language == storage::FrameLanguage::kPython) {
    // nn.Module.__call__'s two frames before every forward: the call, not the model.
    const std::string_view file = frame.file ? std::string_view(*frame.file) : "";
    const std::string_view function = frame.function ? std::string_view(*frame.function) : "";
    if (file.ends_with("/torch/nn/modules/module.py") &&
        (function.ends_with("_call_impl") || function.ends_with("_wrapped_call_impl")))
      return FoldClass::kFramework;
    return FoldClass::kNone;
  }
  const std::string_view name = storage::path_base_name(frame.module);
  if (name.starts_with("libpython") ||
      (name.starts_with("python") && name.find(".so") == std::string_view::npos))
    return FoldClass::kInterpreter;
  if (name.starts_with("libtorch_python.") || starts_with_any(name, {"_C.", "_ctypes.", "libffi."}))
    return FoldClass::kBinding;
  if (starts_with_any(name, {"libtorch", "libc10", "libcudart.", "libcuda.", "libcublas",
                             "libcudnn", "libnccl", "libnvrtc", "libnvJitLink"}))
    return FoldClass::kFramework;
  return FoldClass::kNone;
}

std::string aten_operator(const std::string& function) {
  const std::string_view name = ops_struct(function);
  if (name.empty()) return {};
  return "aten::" + std::string(without_overload(name));
}

std::vector<StackLine> fold_stack(const std::vector<storage::StackFrame>& stack) {
  std::vector<StackLine> lines;
  std::size_t outermost_python = stack.size();
  for (std::size_t i = stack.size(); i-- > 0;) {
    if (stack[i].language == storage::FrameLanguage::kPython) {
      outermost_python = i;
      break;
    }
  }
  const bool python = outermost_python != stack.size();
  // A native stack's way in (`_start` and libc's start, a thread's start) is one line.
  const std::size_t start_up = python ? stack.size() : start_up_run(stack);
  for (std::size_t i = 0; i < stack.size();) {
    if (i == start_up) {
      const bool thread =
          std::any_of(stack.begin() + static_cast<std::ptrdiff_t>(i), stack.end(),
                      [](const storage::StackFrame& frame) {
                        return frame.function && (*frame.function == "start_thread");
                      });
      lines.push_back({i, stack.size() - 1, true,
                       (thread ? "thread start: " : "program start: ") +
                           run_summary(stack, i, stack.size() - 1)});
      break;
    }
    if (!python || !folds(stack, i, outermost_python)) {
      lines.push_back({i, i, false, {}});
      ++i;
      continue;
    }
    std::size_t last = i;
    while (last + 1 < stack.size() && folds(stack, last + 1, outermost_python)) ++last;
    lines.push_back({i, last, true, run_summary(stack, i, last)});
    i = last + 1;
  }
  return lines;
}

std::vector<storage::StackFrame> folded_frames(const std::vector<storage::StackFrame>& stack) {
  std::vector<storage::StackFrame> frames;
  for (const StackLine& line : fold_stack(stack)) {
    if (!line.folded) {
      frames.push_back(stack[line.first]);
      continue;
    }
    storage::StackFrame& run = frames.emplace_back();
    run.callsite_id = stack[line.first].callsite_id;
    run.function = "[" + line.summary + "]";
  }
  return frames;
}

}  // namespace vramtrace::text
