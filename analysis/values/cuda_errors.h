// Names for the cudaError_t codes an allocation or free call can return, so that reports say
// "cudaErrorMemoryAllocation" rather than "2". Values from CUDA's driver_types.h, which has
// kept them stable since CUDA 10.
#pragma once

#include <optional>
#include <string_view>

namespace vramtrace::analysis {

// The cudaError_t / CUresult value both APIs use for "out of memory"; PyTorch's allocator
// reports are recorded with the same value.
inline constexpr int kOutOfMemoryResult = 2;

// The cudaError_t enumerator's name; empty for a code this table does not list.
std::optional<std::string_view> cuda_error_name(int code);

}  // namespace vramtrace::analysis
