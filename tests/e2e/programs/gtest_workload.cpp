// A GoogleTest binary with the vramtrace listener (include/vramtrace/gtest_listener.h): one test
// keeps a cudaMalloc past its end, one frees what it makes. Run under `vramtrace run` by
// e2e.GateTest; `vramtrace gate` must blame exactly the first.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <vramtrace/gtest_listener.h>

namespace {

void* g_kept = nullptr;  // what the leaking test leaves behind

TEST(GpuWorkload, Leaky) {
  ASSERT_EQ(cudaMalloc(&g_kept, 1 << 20), cudaSuccess);  // PLANT: leaky gtest
}

TEST(GpuWorkload, Clean) {
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 2 << 20), cudaSuccess);
  ASSERT_EQ(cudaFree(scratch), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  vramtrace::install_gtest_listener();
  return RUN_ALL_TESTS();
}
