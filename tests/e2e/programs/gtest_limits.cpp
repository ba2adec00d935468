// A GoogleTest binary whose tests set GPU memory limits (include/vramtrace/gtest_listener.h):
// under `vramtrace run`, exactly the tests that break theirs must fail, each with the stack of
// what it left live. Run by e2e.GtestListener.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <vramtrace/gtest_listener.h>

namespace {

constexpr unsigned long long kMiB = 1ull << 20;
void* g_kept[2] = {};  // what the leaking tests leave behind

TEST(Limits, LeakOverItsLimitFails) {
  VRAMTRACE_LIMIT_GPU_LEAKS(0);
  ASSERT_EQ(cudaMalloc(&g_kept[0], kMiB), cudaSuccess);  // PLANT: leak over the limit
}

TEST(Limits, CleanUnderItsLimitPasses) {
  VRAMTRACE_LIMIT_GPU_LEAKS(0);
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 2 * kMiB), cudaSuccess);
  ASSERT_EQ(cudaFree(scratch), cudaSuccess);
}

TEST(Limits, PeakOverItsLimitFails) {
  VRAMTRACE_LIMIT_GPU_MEMORY(3 * kMiB);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 2 * kMiB), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 2 * kMiB), cudaSuccess);  // 4 MiB live at once
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaFree(b), cudaSuccess);
}

TEST(Limits, PeakUnderItsLimitPasses) {
  VRAMTRACE_LIMIT_GPU_MEMORY(8 * kMiB);
  void* a = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 4 * kMiB), cudaSuccess);
  ASSERT_EQ(cudaFree(a), cudaSuccess);
}

TEST(Limits, LeakWithoutALimitPasses) {
  ASSERT_EQ(cudaMalloc(&g_kept[1], kMiB), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  vramtrace::install_gtest_listener();
  return RUN_ALL_TESTS();
}
