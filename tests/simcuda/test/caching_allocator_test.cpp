// libc10_cuda_sim.so, the caching allocator stand-in, on a machine of one 16 MiB device. The
// program defines c10::reportMemoryUsageToProfiler and reportOutOfMemoryToProfiler itself and
// exports them: the allocator's calls reach these only because they cross the library
// boundary to an interposable symbol, as the shim needs them to.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "c10_cuda_sim.h"
#include "c10_profiler_abi.h"
#include "machine_main.h"

namespace {

struct Report {
  void* ptr;
  int64_t size;
  size_t allocated, reserved;
  int type, device;
};
std::vector<Report> g_reports;
std::vector<Report> g_ooms;

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

namespace c10 {
__attribute__((visibility("default"))) void reportMemoryUsageToProfiler(
    void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved, Device device) {
  g_reports.push_back({ptr, alloc_size, total_allocated, total_reserved,
                       static_cast<int>(device.type_), device.index_});
}
__attribute__((visibility("default"))) void reportOutOfMemoryToProfiler(int64_t alloc_size,
                                                                        size_t total_allocated,
                                                                        size_t total_reserved,
                                                                        Device device) {
  g_ooms.push_back({nullptr, alloc_size, total_allocated, total_reserved,
                    static_cast<int>(device.type_), device.index_});
}
}  // namespace c10

namespace {

sim_allocator_stats stats() {
  sim_allocator_stats s{};
  EXPECT_EQ(sim_stats(0, &s), 0);
  return s;
}

class CachingAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_empty_cache();
    g_reports.clear();
    g_ooms.clear();
  }
};

TEST_F(CachingAllocator, RoundsTo512AndPacksSmallBlocksIntoOne2MiBSegment) {
  void* a = sim_alloc(1, 0);
  void* b = sim_alloc(1000, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 512);  // split from one segment
  sim_allocator_stats s = stats();
  EXPECT_EQ(s.allocated_bytes, 512u + 1024u);
  EXPECT_EQ(s.reserved_bytes, 2 * kMiB);
  EXPECT_EQ(s.segments, 1u);
  ASSERT_EQ(g_reports.size(), 2u);
  EXPECT_EQ(g_reports[0].ptr, a);
  EXPECT_EQ(g_reports[0].size, 512);
  EXPECT_EQ(g_reports[0].allocated, 512u);
  EXPECT_EQ(g_reports[0].reserved, 2 * kMiB);
  EXPECT_EQ(g_reports[0].type, 1);  // CUDA
  EXPECT_EQ(g_reports[0].device, 0);
  EXPECT_EQ(g_reports[1].size, 1024);
  EXPECT_EQ(g_reports[1].allocated, 1536u);
  EXPECT_EQ(sim_free(a), 0);
  EXPECT_EQ(sim_free(b), 0);
}

TEST_F(CachingAllocator, FreedBlocksAreCachedAndReusedUntilEmptyCache) {
  void* a = sim_alloc(3 * kMiB, 0);  // large: its own 4 MiB segment
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(stats().reserved_bytes, 4 * kMiB);
  EXPECT_EQ(sim_free(a), 0);
  ASSERT_EQ(g_reports.size(), 2u);
  EXPECT_EQ(g_reports[1].ptr, a);
  // 1 MiB would remain: a large block is split only when more than 1 MiB remains, so the
  // block is the whole segment, as PyTorch's is.
  EXPECT_EQ(g_reports[0].size, 4 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(g_reports[1].size, -4 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(g_reports[1].allocated, 0u);
  EXPECT_EQ(g_reports[1].reserved, 4 * kMiB);
  EXPECT_EQ(stats().reserved_bytes, 4 * kMiB);  // cached, not given back
  void* again = sim_alloc(3 * kMiB, 0);
  EXPECT_EQ(again, a);  // from the cache
  EXPECT_EQ(sim_free(again), 0);
  sim_empty_cache();
  EXPECT_EQ(stats().reserved_bytes, 0u);
  EXPECT_EQ(stats().segments, 0u);
}

TEST_F(CachingAllocator, LargeBlocksAreSplitWhenMoreThan1MiBRemains) {
  void* a = sim_alloc(6 * kMiB, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(sim_free(a), 0);
  void* b = sim_alloc(2 * kMiB, 0);  // from the cached 6 MiB: 4 MiB remain, split off
  EXPECT_EQ(b, a);
  EXPECT_EQ(g_reports.back().size, 2 * static_cast<int64_t>(kMiB));
  void* c = sim_alloc(4 * kMiB, 0);
  EXPECT_EQ(static_cast<char*>(c), static_cast<char*>(a) + 2 * kMiB);
  EXPECT_EQ(stats().segments, 1u);
  EXPECT_EQ(sim_free(b), 0);
  EXPECT_EQ(sim_free(c), 0);
}

TEST_F(CachingAllocator, FreeOfAnUnknownPointerFails) {
  int x = 0;
  EXPECT_EQ(sim_free(&x), -1);
  EXPECT_TRUE(g_reports.empty());
}

TEST_F(CachingAllocator, RequestBeyondTheDeviceIsReportedAsOutOfMemory) {
  void* kept = sim_alloc(4 * kMiB, 0);
  ASSERT_NE(kept, nullptr);
  void* cached = sim_alloc(2 * kMiB, 0);
  ASSERT_NE(cached, nullptr);
  ASSERT_EQ(sim_free(cached), 0);
  g_reports.clear();
  EXPECT_EQ(sim_alloc(64 * kMiB, 0), nullptr);
  ASSERT_EQ(g_ooms.size(), 1u);
  EXPECT_EQ(g_ooms[0].size, 64 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(g_ooms[0].allocated, 4 * kMiB);
  // The cached segment was given back before the retry; the one in use was not.
  EXPECT_EQ(g_ooms[0].reserved, 4 * kMiB);
  EXPECT_TRUE(g_reports.empty());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // no sticky error left for the program
  EXPECT_EQ(sim_free(kept), 0);
}

TEST_F(CachingAllocator, FreedNeighboursMergeIntoOneBlock) {
  void* a = sim_alloc(512, 0);
  void* b = sim_alloc(512, 0);
  void* c = sim_alloc(512, 0);
  ASSERT_EQ(sim_free(a), 0);
  ASSERT_EQ(sim_free(c), 0);
  ASSERT_EQ(sim_free(b), 0);
  // One free block again: the whole segment can go back.
  sim_empty_cache();
  EXPECT_EQ(stats().segments, 0u);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "1"}, {"SIMCUDA_DEVICE_MEMORY", "16MiB"}});
}
