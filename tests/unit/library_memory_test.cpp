// Which allocations a CUDA library made for itself: by the innermost frame's module.
#include "analysis/allocator/library_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vramtrace::analysis {
namespace {

storage::StackFrame frame_in(const std::string& module) {
  storage::StackFrame frame;
  frame.module = module;
  return frame;
}

TEST(LibraryMemory, TheInnermostFramesModuleNamesTheLibrary) {
  EXPECT_EQ(allocating_cuda_library({frame_in("/usr/local/cuda/lib64/libcublas.so.13"),
                                     frame_in("/venv/torch/lib/libtorch_cuda.so")}),
            "libcublas.so.13");
  EXPECT_EQ(allocating_cuda_library({frame_in("/usr/lib/libcublasLt.so.13")}), "libcublasLt.so.13");
  EXPECT_EQ(allocating_cuda_library({frame_in("/venv/nvidia/cudnn/lib/libcudnn_graph.so.9")}),
            "libcudnn_graph.so.9");
  EXPECT_EQ(allocating_cuda_library({frame_in("/venv/nvidia/nccl/lib/libnccl.so.2")}),
            "libnccl.so.2");
}

TEST(LibraryMemory, AnAllocationMadeElsewhereIsNotALibrarys) {
  // PyTorch's allocator, called from cuBLAS's frames further out, is PyTorch's.
  EXPECT_EQ(allocating_cuda_library(
                {frame_in("/venv/torch/lib/libc10_cuda.so"), frame_in("/usr/lib/libcublas.so.13")}),
            std::nullopt);
  EXPECT_EQ(allocating_cuda_library({frame_in("/home/me/libcublas_wrapper.so")}), std::nullopt);
  EXPECT_EQ(allocating_cuda_library({}), std::nullopt);
  // A frame without a module (a cut stack's mark) names nothing.
  storage::StackFrame cut;
  cut.cut = storage::StackCut::kTooDeep;
  EXPECT_EQ(allocating_cuda_library({cut}), std::nullopt);
}

}  // namespace
}  // namespace vramtrace::analysis
