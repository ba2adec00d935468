// ProcessHistory answers the same from the time index and from scans of the allocation table:
// every event in the same order, the same live set after every event, the same allocator
// segments. Checked on the allocator trace (blocks in segments, two processes) and on a random
// trace whose lifetimes land on every level of the index.
#include "analysis/time/process_history.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "allocator_trace.h"
#include "random_trace.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

using Event = std::tuple<bool, std::uint64_t, std::int64_t, std::uint64_t>;  // free, seq, id, size

std::vector<Event> events_of(const ProcessHistory& history, std::int64_t upid) {
  std::vector<Event> events;
  history.for_each_event(upid, [&](const storage::AllocationEvent& e) {
    events.emplace_back(e.type == storage::AllocationEvent::Type::kFree, e.seq, e.allocation_id,
                        e.size);
  });
  return events;
}

std::vector<std::int64_t> live_ids(const ProcessHistory& history, std::int64_t upid,
                                   std::uint64_t seq) {
  std::vector<std::int64_t> ids;
  for (const auto& r : history.live_at(upid, seq)) ids.push_back(r.allocation.id);
  return ids;
}

void expect_same_answers(const std::filesystem::path& path, const std::vector<std::int64_t>& upids,
                         std::uint64_t last_seq) {
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_TRUE(trace) << failure.message;
  ASSERT_TRUE(storage::TimeIndex::kept_in_file(path));
  const ProcessHistory indexed(*trace);
  const ProcessHistory scanned(*trace, ProcessHistory::Source::kScans);
  EXPECT_EQ(indexed.allocator_segments(), scanned.allocator_segments());
  for (const std::int64_t upid : upids) {
    SCOPED_TRACE(upid);
    const std::vector<Event> events = events_of(indexed, upid);
    EXPECT_FALSE(events.empty());
    EXPECT_EQ(events, events_of(scanned, upid));
    std::size_t nonempty = 0;
    for (std::uint64_t seq = 0; seq <= last_seq; seq += 1 + last_seq / 500) {
      const auto live = live_ids(indexed, upid, seq);
      nonempty += live.empty() ? 0 : 1;
      ASSERT_EQ(live, live_ids(scanned, upid, seq)) << "seq " << seq;
    }
    EXPECT_GT(nonempty, 0u);
  }
}

TEST(ProcessHistory, TheIndexAndTheScansAgreeOnTheAllocatorTrace) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  expect_same_answers(path, {1, 2}, 14);
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_TRUE(trace);
  const ProcessHistory history(*trace, ProcessHistory::Source::kScans);
  // S1 and S2 held blocks; R1..R3 never did.
  EXPECT_EQ(history.allocator_segments().size(), 2u);
  // After event 8: S1, B2, B3, S2, B4 (B1 was freed at 6).
  EXPECT_EQ(history.live_at(1, 8).size(), 5u);
}

TEST(ProcessHistory, TheIndexAndTheScansAgreeOnARandomTrace) {
  testing::TempDir dir;
  const auto path = dir / "random.db";
  std::uint64_t last_seq = 0;
  ASSERT_EQ(testing::write_random_trace(path, &last_seq), "");
  expect_same_answers(path, {1}, last_seq);
}

}  // namespace
}  // namespace vramtrace::analysis
