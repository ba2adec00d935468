// Fragmentation numbers on hand-built segment layouts: lay_out_segments() gets the live
// allocations of one moment and which ids are the allocator's segments, as the time index
// gives them. Every expected number is worked out in the comment above its test.
#include "analysis/allocator/fragmentation.h"

#include <gtest/gtest.h>

#include "storage/schema.h"

namespace vramtrace {
namespace {

namespace kind = storage::allocation_kind;
constexpr std::uint64_t K = 1024, M = 1024 * 1024;

storage::AllocationRecord live(std::int64_t id, int kind_id, std::uint64_t address,
                               std::uint64_t size, std::uint64_t requested = 0, int device = 0) {
  storage::AllocationRecord record;
  record.allocation.id = id;
  record.allocation.kind = kind_id;
  record.allocation.device = device;
  record.allocation.address = address;
  record.allocation.size = size;
  record.allocation.requested_size = requested;
  return record;
}

// One 8M segment at 0x1000000: [free 1M][used 2M, asked 1.5M][free 3M][used 1M][free 1M].
// Free 1M + 3M + 1M = 5M, largest 3M: external 1 - 3/5 = 0.4.
// Internal: rounded 2M + 1M = 3M, requested 1.5M + 1M (the second block's request is unknown:
// 0, so it is not counted): only the first counts, (2M - 1.5M) / 2M = 0.25.
TEST(Fragmentation, OneSegmentWithGapsBetweenBlocks) {
  const std::uint64_t base = 0x1000000;
  const auto layout = analysis::lay_out_segments(
      {live(1, kind::kDevice, base, 8 * M), live(2, kind::kBlock, base + 1 * M, 2 * M, 3 * M / 2),
       live(3, kind::kBlock, base + 6 * M, 1 * M)},
      {1});
  ASSERT_EQ(layout.segments.size(), 1u);
  const auto& blocks = layout.segments[0].blocks;
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0].address, base);
  EXPECT_EQ(blocks[0].size, 1 * M);
  EXPECT_FALSE(blocks[0].used);
  EXPECT_TRUE(blocks[1].used);
  EXPECT_EQ(blocks[1].size, 2 * M);
  EXPECT_EQ(blocks[1].requested, 3 * M / 2);
  EXPECT_EQ(blocks[2].address, base + 3 * M);
  EXPECT_EQ(blocks[2].size, 3 * M);
  EXPECT_TRUE(blocks[3].used);
  EXPECT_EQ(blocks[3].requested, std::nullopt);
  EXPECT_EQ(blocks[4].address, base + 7 * M);
  EXPECT_EQ(blocks[4].size, 1 * M);
  EXPECT_EQ(layout.total_free, 5 * M);
  EXPECT_EQ(layout.largest_free, 3 * M);
  EXPECT_EQ(layout.used_bytes, 3 * M);
  EXPECT_DOUBLE_EQ(layout.external_fragmentation, 0.4);
  EXPECT_DOUBLE_EQ(layout.internal_fragmentation, 0.25);
  EXPECT_EQ(layout.largest_request, 3 * M);
  // 1M twice in [1M, 2M), 3M in [2M, 4M).
  ASSERT_EQ(layout.free_sizes.size(), 2u);
  EXPECT_EQ(layout.free_sizes[0].from, 1 * M);
  EXPECT_EQ(layout.free_sizes[0].to, 2 * M);
  EXPECT_EQ(layout.free_sizes[0].count, 2u);
  EXPECT_EQ(layout.free_sizes[0].bytes, 2 * M);
  EXPECT_EQ(layout.free_sizes[1].from, 2 * M);
  EXPECT_EQ(layout.free_sizes[1].count, 1u);
  EXPECT_TRUE(layout.raw.empty());
}

// A full segment and an empty one: all free memory is one piece, so external fragmentation is
// 0 however much is free; a segment with no live block is one free block.
TEST(Fragmentation, FullAndEmptySegments) {
  const auto layout = analysis::lay_out_segments(
      {live(1, kind::kDevice, 0x100000, 2 * M), live(2, kind::kBlock, 0x100000, 2 * M, 2 * M),
       live(3, kind::kDevice, 0x900000, 4 * M)},
      {1, 3});
  ASSERT_EQ(layout.segments.size(), 2u);
  ASSERT_EQ(layout.segments[0].blocks.size(), 1u);
  EXPECT_TRUE(layout.segments[0].blocks[0].used);
  ASSERT_EQ(layout.segments[1].blocks.size(), 1u);
  EXPECT_FALSE(layout.segments[1].blocks[0].used);
  EXPECT_EQ(layout.total_free, 4 * M);
  EXPECT_EQ(layout.largest_free, 4 * M);
  EXPECT_DOUBLE_EQ(layout.external_fragmentation, 0.0);
  EXPECT_DOUBLE_EQ(layout.internal_fragmentation, 0.0);
}

// Four 512K free pieces in four segments: 2M free, none of it able to hold 1M.
// External: 1 - 512K / 2M = 0.75.
TEST(Fragmentation, EqualPiecesAcrossSegments) {
  std::vector<storage::AllocationRecord> rows;
  std::unordered_set<std::int64_t> segments;
  for (std::int64_t i = 0; i < 4; ++i) {
    const std::uint64_t base = 0x10000000 + static_cast<std::uint64_t>(i) * 0x1000000;
    rows.push_back(live(1 + 2 * i, kind::kDevice, base, 2 * M));
    rows.push_back(live(2 + 2 * i, kind::kBlock, base, 3 * M / 2, 3 * M / 2));
    segments.insert(1 + 2 * i);
  }
  const auto layout = analysis::lay_out_segments(rows, segments);
  EXPECT_EQ(layout.segments.size(), 4u);
  EXPECT_EQ(layout.total_free, 2 * M);
  EXPECT_EQ(layout.largest_free, 512 * K);
  EXPECT_DOUBLE_EQ(layout.external_fragmentation, 0.75);
  EXPECT_EQ(layout.largest_request, 512 * K);
  ASSERT_EQ(layout.free_sizes.size(), 1u);
  EXPECT_EQ(layout.free_sizes[0].count, 4u);
}

// Expandable segments: two contiguous 2M mappings are one 4M segment, and a 3M block that
// runs from the first mapping into the second is laid out whole. A third mapping elsewhere is
// a segment of its own.
TEST(Fragmentation, ContiguousMappingsAreOneSegment) {
  const auto layout = analysis::lay_out_segments(
      {live(1, kind::kVmmMapping, 0x40000000, 2 * M), live(2, kind::kVmmMapping, 0x40200000, 2 * M),
       live(3, kind::kBlock, 0x40000000, 3 * M, 3 * M),
       live(4, kind::kVmmMapping, 0x50000000, 2 * M)},
      {1, 2, 4});
  ASSERT_EQ(layout.segments.size(), 2u);
  EXPECT_EQ(layout.segments[0].size, 4 * M);
  EXPECT_TRUE(layout.segments[0].expandable);
  ASSERT_EQ(layout.segments[0].blocks.size(), 2u);
  EXPECT_EQ(layout.segments[0].blocks[0].size, 3 * M);
  EXPECT_EQ(layout.segments[0].blocks[1].size, 1 * M);
  EXPECT_EQ(layout.total_free, 3 * M);
  EXPECT_EQ(layout.largest_free, 2 * M);
  EXPECT_DOUBLE_EQ(layout.external_fragmentation, 1.0 - 2.0 / 3.0);
}

// Raw allocations (outside the allocator) are not segments: per device, the gaps between them.
// Device 0: [0x1000, +0x1000) and [0x3000, +0x1000): one gap of 0x1000 at 0x2000. Device 1: one
// allocation, no gap. Pinned host memory is not device memory and is left out.
TEST(Fragmentation, RawAllocationsGiveAddressGaps) {
  const auto layout = analysis::lay_out_segments(
      {live(1, kind::kDevice, 0x3000, 0x1000), live(2, kind::kDevice, 0x1000, 0x1000),
       live(3, kind::kAsync, 0x9000, 0x2000, 0, 1), live(4, kind::kHostPinned, 0x2000, 0x800)},
      {});
  EXPECT_TRUE(layout.segments.empty());
  EXPECT_EQ(layout.total_free, 0u);
  EXPECT_DOUBLE_EQ(layout.external_fragmentation, 0.0);
  ASSERT_EQ(layout.raw.size(), 2u);
  EXPECT_EQ(layout.raw[0].device, 0);
  EXPECT_EQ(layout.raw[0].count, 2u);
  EXPECT_EQ(layout.raw[0].bytes, 0x2000u);
  ASSERT_EQ(layout.raw[0].gaps.size(), 1u);
  EXPECT_EQ(layout.raw[0].gaps[0].address, 0x2000u);
  EXPECT_EQ(layout.raw[0].gaps[0].size, 0x1000u);
  EXPECT_EQ(layout.raw[1].device, 1);
  EXPECT_TRUE(layout.raw[1].gaps.empty());
}

}  // namespace
}  // namespace vramtrace
