// LiveQueries (collector/live_query.h) from hand-made event sequences: what a test harness is
// told about the allocations made since its checkpoint, live and at their most.
#include "collector/live_query.h"

#include <gtest/gtest.h>

namespace vramtrace::collector {
namespace {

constexpr int kDevice = 1, kHostPinned = 3, kBlock = 8;
constexpr uint64_t kMiB = 1 << 20;

std::vector<storage::StackFrame> stack_named(std::optional<int64_t> callsite) {
  if (!callsite) return {};
  storage::StackFrame frame;
  frame.function = "site_" + std::to_string(*callsite);
  frame.file = "train.py";
  frame.line = static_cast<int>(*callsite);
  frame.module = "/usr/bin/python3";
  return {frame};
}

std::string kind_named(int kind) {
  return kind == kBlock ? "block" : "kind_" + std::to_string(kind);
}

LiveQueries::Reply ask(LiveQueries& q, uint64_t checkpoint) {
  return q.answer(/*query_id=*/42, checkpoint, stack_named, kind_named);
}

TEST(LiveQueries, CountsWhatWasMadeSinceTheCheckpointAndIsStillLive) {
  LiveQueries q;
  q.on_alloc(1, 1, kDevice, 8 * kMiB, 10);  // before the checkpoint: never counted
  q.open_checkpoint(2);
  q.on_alloc(2, 3, kDevice, kMiB, 11);
  q.on_alloc(3, 4, kDevice, kMiB, 11);
  q.on_alloc(4, 5, kHostPinned, 2 * kMiB, 12);
  q.on_free(3);
  q.on_free(1);
  const LiveQueries::Reply reply = ask(q, 2);
  EXPECT_EQ(std::string(reply.header.magic, 8), "VRTLIVE1");
  EXPECT_EQ(reply.header.query_id, 42u);
  EXPECT_EQ(reply.header.status, wire::kLiveReplyAnswered);
  EXPECT_EQ(reply.header.live_bytes, 3 * kMiB);
  EXPECT_EQ(reply.header.live_count, 2u);
  EXPECT_EQ(reply.header.peak_bytes, 2 * kMiB);  // device memory only: pinned host is not
  EXPECT_EQ(reply.header.block_level, 0u);
  EXPECT_EQ(reply.header.report_bytes, reply.report.size());
  EXPECT_EQ(reply.report,
            "3.0 MiB (3145728 bytes) in 2 allocations made since the checkpoint still live "
            "(segment level); at most 2.0 MiB (2097152 bytes) live at once\n"
            "\n"
            "2.0 MiB (2097152 bytes) in 1 kind_3 allocation from:\n"
            "    #0 site_12 at train.py:12 (/usr/bin/python3)\n"
            "\n"
            "1.0 MiB (1048576 bytes) in 1 kind_1 allocation from:\n"
            "    #0 site_11 at train.py:11 (/usr/bin/python3)\n");
  // The answer closes the checkpoint.
  EXPECT_EQ(ask(q, 2).header.status, wire::kLiveReplyUnknownCheckpoint);
}

TEST(LiveQueries, BlocksAreTheLevelOnceSeenAndTheAllocatorsSegmentsAreItsCache) {
  LiveQueries q;
  q.open_checkpoint(1);
  q.on_alloc(1, 2, kDevice, 20 * kMiB, 5);  // the allocator grows its pool in the test
  q.on_alloc(2, 3, kBlock, 4 * kMiB, 6);
  q.on_block_in_segment(1);
  q.on_alloc(3, 4, kBlock, 6 * kMiB, 7);
  q.on_block_in_segment(1);
  q.on_free(3);
  q.on_alloc(5, 6, kDevice, kMiB, 8);  // a raw cudaMalloc beside the allocator: counted
  const LiveQueries::Reply reply = ask(q, 1);
  EXPECT_EQ(reply.header.block_level, 1u);
  EXPECT_EQ(reply.header.live_bytes, 5 * kMiB);  // the 4 MiB block and the raw 1 MiB
  EXPECT_EQ(reply.header.live_count, 2u);
  EXPECT_EQ(reply.header.peak_bytes, 10 * kMiB);  // blocks: 4 + 6 at once
}

TEST(LiveQueries, NestedCheckpointsEachCountFromTheirOwnPlace) {
  LiveQueries q;
  q.open_checkpoint(1);
  q.on_alloc(1, 2, kDevice, 4 * kMiB, 5);
  q.open_checkpoint(3);
  q.on_alloc(2, 4, kDevice, kMiB, 6);
  q.on_free(1);  // made before the inner checkpoint: the inner one never counted it
  const LiveQueries::Reply inner = ask(q, 3);
  EXPECT_EQ(inner.header.live_bytes, kMiB);
  EXPECT_EQ(inner.header.peak_bytes, kMiB);
  const LiveQueries::Reply outer = ask(q, 1);
  EXPECT_EQ(outer.header.live_bytes, kMiB);
  EXPECT_EQ(outer.header.peak_bytes, 5 * kMiB);
}

TEST(LiveQueries, UnknownAndDroppedCheckpointsAreSaidSo) {
  LiveQueries q;
  EXPECT_EQ(ask(q, 7).header.status, wire::kLiveReplyUnknownCheckpoint);
  for (uint64_t seq = 1; seq <= LiveQueries::kMaxOpen + 1; ++seq) q.open_checkpoint(seq);
  EXPECT_EQ(q.dropped_checkpoints(), 1u);
  EXPECT_EQ(ask(q, 1).header.status, wire::kLiveReplyUnknownCheckpoint);  // the oldest went
  EXPECT_EQ(ask(q, 2).header.status, wire::kLiveReplyAnswered);
}

TEST(LiveQueries, TheReportShowsTheLargestStacksAndSaysHowManyMore) {
  LiveQueries q;
  q.open_checkpoint(1);
  for (int64_t i = 0; i < 8; ++i)
    q.on_alloc(i + 1, static_cast<uint64_t>(i) + 2, kDevice, static_cast<uint64_t>(i + 1) * kMiB,
               100 + i);
  q.on_alloc(9, 20, kDevice, kMiB / 2, std::nullopt);
  const std::string report = ask(q, 1).report;
  EXPECT_NE(report.find("8.0 MiB (8388608 bytes) in 1 kind_1 allocation from:\n"
                        "    #0 site_107 at train.py:107"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("site_102"), std::string::npos) << report;  // 6th largest: not shown
  EXPECT_NE(report.find("\n... 4 more stacks (the trace has them all)\n"), std::string::npos)
      << report;
}

}  // namespace
}  // namespace vramtrace::collector
