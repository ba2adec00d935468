#include "analysis/allocator/library_memory.h"

#include <array>
#include <string_view>

namespace vramtrace::analysis {
namespace {

// The CUDA libraries that allocate device memory for themselves, by the start of their file
// names (each is "<name>.so.<major>" as the toolkit and the pip wheels install it).
constexpr std::array<std::string_view, 11> kLibraries = {
    "libcublas.so", "libcublasLt.so",   "libcudnn",       "libnccl.so",
    "libcufft.so",  "libcusparse.so",   "libcusolver.so", "libcurand.so",
    "libnvshmem",   "libcusparseLt.so", "libnvJitLink.so"};

}  // namespace

std::optional<std::string> allocating_cuda_library(const std::vector<storage::StackFrame>& stack) {
  // The innermost frame with a module: a cut stack's mark has none.
  for (const storage::StackFrame& frame : stack) {
    if (frame.module.empty()) continue;
    const std::string_view file = storage::path_base_name(frame.module);
    for (const std::string_view library : kLibraries) {
      if (file.starts_with(library)) return std::string(file);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace vramtrace::analysis
