#include "collector/python_splice.h"

namespace vramtrace::collector {

PythonSplice find_python_splice(std::span<const bool> in_interpreter) {
  PythonSplice splice{in_interpreter.size(), in_interpreter.size()};
  for (std::size_t i = 0; i < in_interpreter.size(); ++i) {
    if (!in_interpreter[i]) continue;
    if (splice.begin == in_interpreter.size()) splice.begin = i;
    splice.end = i + 1;
  }
  return splice;
}

}  // namespace vramtrace::collector
