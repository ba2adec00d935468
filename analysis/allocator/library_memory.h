// Memory that NVIDIA's libraries take for themselves: device memory cuBLAS, cuBLASLt, cuDNN,
// NCCL and the other CUDA libraries allocate through the runtime linked into them (a cuBLAS
// handle's workspace, cuDNN's and NCCL's buffers), outside PyTorch's allocator. It is held
// for the life of the library's handle or communicator, which a program keeps to its end; it
// is not the program's leak, nor the allocator's cache, and the reports name it apart.
//
// An allocation is the library's when the innermost frame of its stack, the code that called
// the allocation API, is in one of those libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

// The library's file name ("libcublas.so.13") when the stack's allocation was made by a CUDA
// library; nullopt otherwise, and for an empty stack.
std::optional<std::string> allocating_cuda_library(const std::vector<storage::StackFrame>& stack);

// What one library held at a moment.
struct LibraryMemory {
  std::string library;  // its file name
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
};

}  // namespace vramtrace::analysis
