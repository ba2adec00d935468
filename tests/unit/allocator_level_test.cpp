// The allocator level, from wire records to reports: TraceIngest ties each caching-allocator
// block to the segment that holds it (the first block starts at its segment's address), block
// frees end blocks only, an allocator OOM is a failed block; then the leak report and the
// summary tell live blocks (leaks) from the allocator's cache.
#include <gtest/gtest.h>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "ingest_harness.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "vramtrace.pb.h"

namespace vramtrace {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSegment = 0x7f0000000000;  // a 2 MiB cudaMalloc
constexpr uint64_t kOther = 0x7f0000400000;    // a 1 MiB cudaMalloc outside the allocator

class AllocatorLevelTest : public ::testing::Test {
 protected:
  void feed(const wire::Envelope& envelope) { harness_.feed(envelope); }
  void segment(uint64_t address, uint64_t size) {
    feed(testing_support::IngestHarness::cuda_malloc(address, size, {}));
  }
  void block(uint64_t address, uint64_t size, uint64_t allocated, uint64_t reserved) {
    wire::Envelope e;
    auto* a = e.mutable_alloc();
    a->set_kind(wire::KIND_BLOCK);
    a->set_api(wire::API_C10_REPORT_MEMORY_USAGE);
    a->set_address(address);
    a->set_size(size);
    a->set_requested_size(size);
    a->set_allocator_allocated(allocated);
    a->set_allocator_reserved(reserved);
    feed(e);
  }
  void free_block(uint64_t address, uint64_t size, uint64_t allocated, uint64_t reserved) {
    wire::Envelope e;
    auto* f = e.mutable_free();
    f->set_api(wire::API_C10_REPORT_MEMORY_USAGE);
    f->set_address(address);
    f->set_size(size);
    f->set_allocator_allocated(allocated);
    f->set_allocator_reserved(reserved);
    feed(e);
  }
  void out_of_memory(uint64_t size, uint64_t allocated, uint64_t reserved) {
    wire::Envelope e;
    auto* a = e.mutable_alloc();
    a->set_kind(wire::KIND_BLOCK);
    a->set_api(wire::API_C10_REPORT_OUT_OF_MEMORY);
    a->set_size(size);
    a->set_result(2);
    a->set_allocator_allocated(allocated);
    a->set_allocator_reserved(reserved);
    feed(e);
  }
  const storage::TraceReader& finish() { return harness_.finish(); }
  std::vector<storage::AllocationRecord> allocations() {
    std::vector<storage::AllocationRecord> out;
    harness_.reader().for_each_allocation(
        {}, [&](const storage::AllocationRecord& r) { out.push_back(r); });
    return out;
  }
  int64_t stat(const std::string& name) { return harness_.stat(name); }

  testing_support::IngestHarness harness_;
};

TEST_F(AllocatorLevelTest, BlocksAreTiedToTheSegmentHoldingThemTheFirstAtItsOwnAddress) {
  segment(kSegment, 2 * kMiB);                   // id 1
  block(kSegment, 512, 512, 2 * kMiB);           // id 2: same address as its segment
  block(kSegment + 512, 1024, 1536, 2 * kMiB);   // id 3
  block(0x1000, 512, 2048, 2 * kMiB);            // id 4: outside every segment
  block(kSegment + 2 * kMiB - 512, 1024, 0, 0);  // id 5: runs past the segment's end
  finish();
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_FALSE(rows[0].allocation.segment_id.has_value());  // a segment is not in a segment
  EXPECT_EQ(rows[1].allocation.segment_id, 1);
  EXPECT_EQ(rows[1].allocation.allocator_allocated, 512u);
  EXPECT_EQ(rows[1].allocation.allocator_reserved, 2 * kMiB);
  EXPECT_EQ(rows[2].allocation.segment_id, 1);
  EXPECT_FALSE(rows[3].allocation.segment_id.has_value());
  EXPECT_FALSE(rows[4].allocation.segment_id.has_value());
  EXPECT_EQ(stat("block_without_segment"), 2);
  // All live: the segment stays live beside its first block (separate address spaces).
  for (const auto& r : rows) EXPECT_TRUE(r.live_at_end()) << r.allocation.id;
}

TEST_F(AllocatorLevelTest, ABlockFreeEndsTheBlockNotItsSegmentAndACudaFreeNotTheBlock) {
  segment(kSegment, 2 * kMiB);
  block(kSegment, 512, 512, 2 * kMiB);
  free_block(kSegment, 512, 0, 2 * kMiB);
  block(kSegment, 4096, 4096, 2 * kMiB);  // the address handed out again
  wire::Envelope cuda_free;
  cuda_free.mutable_free()->set_api(wire::API_CUDA_FREE);
  cuda_free.mutable_free()->set_address(kSegment);
  feed(cuda_free);  // ends the segment, not the live block at the same address
  finish();
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].live_at_end());
  EXPECT_EQ(rows[0].free->free_api, storage::api::kCudaFree);
  ASSERT_TRUE(rows[1].free.has_value());
  EXPECT_EQ(rows[1].free->free_api, storage::api::kC10ReportMemoryUsage);
  EXPECT_EQ(rows[1].free->allocator_allocated, 0u);
  EXPECT_EQ(rows[1].free->allocator_reserved, 2 * kMiB);
  EXPECT_TRUE(rows[2].live_at_end());
  EXPECT_EQ(rows[2].allocation.segment_id, 1);
  EXPECT_EQ(harness_.reader().bad_frees().size(), 0u);
}

TEST_F(AllocatorLevelTest, AnAllocatorOutOfMemoryIsAFailedBlockWithTheTotals) {
  segment(kSegment, 2 * kMiB);
  block(kSegment, 512, 512, 2 * kMiB);
  out_of_memory(64 * kMiB, 512, 2 * kMiB);
  finish();
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 3u);
  const auto& oom = rows[2].allocation;
  EXPECT_EQ(oom.kind, storage::allocation_kind::kBlock);
  EXPECT_EQ(oom.api, storage::api::kC10ReportOutOfMemory);
  EXPECT_EQ(oom.result, 2);
  EXPECT_EQ(oom.size, 64 * kMiB);
  EXPECT_EQ(oom.allocator_allocated, 512u);
  EXPECT_EQ(oom.allocator_reserved, 2 * kMiB);
  EXPECT_FALSE(oom.segment_id.has_value());
  EXPECT_EQ(stat("block_without_segment"), 0);

  const analysis::Summary summary = analysis::build_summary(harness_.reader());
  ASSERT_EQ(summary.allocator.size(), 1u);
  EXPECT_EQ(summary.allocator[0].out_of_memory, 1u);
}

TEST_F(AllocatorLevelTest, LiveBlocksLeakAndTheAllocatorsSegmentsAreCache) {
  segment(kSegment, 2 * kMiB);             // allocator segment, one block kept
  segment(kSegment + 2 * kMiB, 2 * kMiB);  // allocator segment, every block freed
  segment(kOther, kMiB);                   // a cudaMalloc of the program's own
  block(kSegment, 512, 512, 4 * kMiB);
  block(kSegment + 2 * kMiB, 4096, 4608, 4 * kMiB);
  free_block(kSegment + 2 * kMiB, 4096, 512, 4 * kMiB);
  finish();

  const analysis::LeakReport blocks = analysis::build_leak_report(harness_.reader());
  EXPECT_EQ(blocks.level, "block");
  EXPECT_TRUE(blocks.allocator_events);
  ASSERT_EQ(blocks.groups.size(), 2u);
  EXPECT_EQ(blocks.groups[0].kind_name, "device");  // outside the allocator: still a leak
  EXPECT_EQ(blocks.groups[0].level, "segment");
  EXPECT_EQ(blocks.groups[0].bytes, kMiB);
  EXPECT_EQ(blocks.groups[1].kind_name, "block");
  EXPECT_EQ(blocks.groups[1].level, "block");
  EXPECT_EQ(blocks.groups[1].bytes, 512u);
  EXPECT_EQ(blocks.total_bytes, kMiB + 512);
  EXPECT_EQ(blocks.cached.count, 2u);
  EXPECT_EQ(blocks.cached.bytes, 4 * kMiB - 512);

  analysis::LeakReportOptions segment_level;
  segment_level.level = analysis::LeakLevel::kSegment;
  const analysis::LeakReport segments =
      analysis::build_leak_report(harness_.reader(), segment_level);
  EXPECT_EQ(segments.level, "segment");
  EXPECT_EQ(segments.total_count, 3u);  // the three cudaMallocs, no block
  EXPECT_EQ(segments.total_bytes, 5 * kMiB);
  EXPECT_EQ(segments.cached.count, 0u);

  const analysis::Summary summary = analysis::build_summary(harness_.reader());
  ASSERT_EQ(summary.allocator.size(), 1u);
  const analysis::AllocatorTotals& a = summary.allocator[0];
  EXPECT_TRUE(a.allocator_events);
  EXPECT_EQ(a.live_block_bytes, 512u);
  EXPECT_EQ(a.live_block_count, 1u);
  EXPECT_EQ(a.segment_bytes, 4 * kMiB);
  EXPECT_EQ(a.segment_count, 2u);
  EXPECT_EQ(a.cached_bytes, 4 * kMiB - 512);
  EXPECT_EQ(a.allocator_allocated, 512u);  // the last report's totals
  EXPECT_EQ(a.allocator_reserved, 4 * kMiB);
  ASSERT_EQ(summary.block_peaks.size(), 1u);
  EXPECT_EQ(summary.block_peaks[0].bytes, 4608u);
  ASSERT_EQ(summary.peaks.size(), 1u);
  EXPECT_EQ(summary.peaks[0].bytes, 5 * kMiB);  // segments only: blocks are inside them
}

TEST_F(AllocatorLevelTest, WithoutAllocatorEventsEverythingIsTheSegmentLevel) {
  segment(kSegment, 2 * kMiB);
  finish();
  const analysis::LeakReport report = analysis::build_leak_report(harness_.reader());
  EXPECT_EQ(report.level, "segment");
  EXPECT_FALSE(report.allocator_events);
  EXPECT_EQ(report.total_bytes, 2 * kMiB);
  EXPECT_EQ(report.cached.count, 0u);
  const analysis::Summary summary = analysis::build_summary(harness_.reader());
  ASSERT_EQ(summary.allocator.size(), 1u);
  EXPECT_FALSE(summary.allocator[0].allocator_events);
}

}  // namespace
}  // namespace vramtrace
