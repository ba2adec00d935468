// Which pending rows a batch or a commit writes when short lives are packed
// (storage/pending_rows_held.h): it stops at a young live row, never twice at the same one, and
// keeps a block with its segment.
#include "storage/pending_rows_held.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace vramtrace::storage {
namespace {

PendingAllocation row(std::int64_t id, std::uint64_t alloc_seq, std::optional<std::uint64_t> freed,
                      std::optional<std::int64_t> segment = std::nullopt) {
  AllocationRow made;
  made.id = id;
  made.upid = 1;
  made.alloc_seq = alloc_seq;
  made.segment_id = segment;
  PendingAllocation pending(made, 1);
  if (freed) pending.free = FreeRow{*freed, 0, 0, std::nullopt, 0, std::nullopt, std::nullopt};
  return pending;
}

TEST(PendingRowsHeldTest, AWriteStopsAtTheFirstYoungLiveRow) {
  const std::vector<PendingAllocation> pending{
      row(1, 1, std::nullopt),  // live, but old: 5000 numbers before the last
      row(2, 2, 3), row(3, 4900, std::nullopt), row(4, 4901, 4902), row(5, 5000, std::nullopt)};
  EXPECT_EQ(pending_rows_to_write(pending, INT64_MIN, 100), 2u);
  // Rows the last commit held are written now: the next young one is where it stops.
  EXPECT_EQ(pending_rows_to_write(pending, 3, 100), 4u);
  EXPECT_EQ(pending_rows_to_write(pending, 5, 100), 5u);
  // Too many would wait: all are written.
  EXPECT_EQ(pending_rows_to_write(pending, INT64_MIN, 2), 5u);
}

TEST(PendingRowsHeldTest, ABlockWaitsWithItsSegment) {
  const std::vector<PendingAllocation> pending{row(1, 1, 5), row(2, 10, 20), row(3, 30, 40),
                                               row(4, 50, std::nullopt, 2),
                                               row(5, 60, std::nullopt)};
  // Row 4, live and young, names row 2 as its segment: both wait, and what lies between.
  EXPECT_EQ(pending_rows_to_write(pending, INT64_MIN, 100), 1u);
  const std::vector<PendingAllocation> elsewhere{row(1, 1, 2), row(2, 10, std::nullopt, 99)};
  EXPECT_EQ(pending_rows_to_write(elsewhere, INT64_MIN, 100), 1u);
}

}  // namespace
}  // namespace vramtrace::storage
