// OOM forensics on a small trace written through the real TraceWriter, with every number below
// derived from this table (one MiB = M; S = 0x7f0000000000):
//
// upid 1 (pid 5000), PyTorch-like, block level:
//   seq 1   id 1  device 20M @S (cudaMalloc), the allocator's segment         live
//   seq 2-6 id 2-6 blocks of 4M at S, S+4M, ..., S+16M in segment 1 (cs 2)    ids 3, 5 freed at 7,
//   8 seq 9   id 7  device 6M cudaMalloc, result 2 (the allocator's own try) seq 10  id 8  block
//   6M, c10::reportOutOfMemoryToProfiler, result 2 (cs 2), allocator
//                 totals 12M allocated / 20M reserved
//   seq 11  id 9  device 1M, the program's own, after both OOMs                live
//   At both OOMs: live blocks 12M (ids 2, 4, 6), gaps 4M and 4M: 8M free but no 6M gap.
// upid 2 (pid 5001), no allocator events, segment level:
//   seq 1 id 20 device 3M (cs 1) live; seq 2 id 21 device 1M (cs 2) freed at 3;
//   seq 4 id 22 device 2M (cs 2) live; seq 5 id 23 managed 1M (cs 2) live;
//   seq 6 id 24 device 8M cuMemAlloc, result 2 (cs 1)
// upid 3 (pid 5002), block level, a program's cudaMalloc fails beside the allocator's cache:
//   seq 1 id 30 device 4M @S (segment A); seq 2 id 31 block 4M @S in A, freed at seq 3;
//   seq 4 id 32 device 2M @S+8M (segment B); seq 5 id 33 block 2M @S+8M in B, live;
//   seq 6 id 34 device 3M cudaMalloc, result 2 (the program's own)
//   Segment A has no live block: 4M that empty_cache() would give back; its 4M gap fits 3M.
#include "analysis/reports/oom_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace {
namespace {

namespace kind = storage::allocation_kind;
namespace api = storage::api;
using analysis::OomRecord;

constexpr std::uint64_t M = 1024 * 1024;
constexpr std::uint64_t S = 0x7f0000000000;

// The OOM rows of write_oom_trace(): a failed allocation, with the allocator's totals at the
// OOM when it is the allocator's own report.
void failed(const testing::ProcessWriter& p, std::int64_t id, int kind_id, int api_id,
            std::uint64_t size, std::uint64_t seq, std::int64_t callsite) {
  storage::AllocationRow r = p.row(id, kind_id, api_id, 0, size, seq, callsite);
  r.result = 2;
  if (kind_id == kind::kBlock) {
    r.allocator_allocated = 12 * M;
    r.allocator_reserved = 20 * M;
  }
  p.add(r);
}

void write_oom_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_TRUE(writer) << error;
  storage::TraceWriter& w = *writer;
  testing::add_train_stacks(w);

  const auto p1 = testing::start_process(w, 1, 5000);
  p1.add(p1.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  for (std::int64_t i = 0; i < 5; ++i) {
    p1.block(2 + i, S + static_cast<std::uint64_t>(i) * 4 * M, 4 * M,
             2 + static_cast<std::uint64_t>(i), 1, static_cast<std::uint64_t>(i + 1) * 4 * M,
             20 * M);
  }
  p1.free(3, 7, api::kC10ReportMemoryUsage, 16 * M, 20 * M);
  p1.free(5, 8, api::kC10ReportMemoryUsage, 12 * M, 20 * M);
  failed(p1, 7, kind::kDevice, api::kCudaMalloc, 6 * M, 9, 2);
  failed(p1, 8, kind::kBlock, api::kC10ReportOutOfMemory, 6 * M, 10, 2);
  p1.add(p1.row(9, kind::kDevice, api::kCudaMalloc, S + 64 * M, M, 11, 1));

  const auto p2 = testing::start_process(w, 2, 5001);
  p2.add(p2.row(20, kind::kDevice, api::kCudaMalloc, S, 3 * M, 1, 1));
  p2.add(p2.row(21, kind::kDevice, api::kCudaMalloc, S + 4 * M, M, 2, 2));
  p2.free(21, 3, api::kCudaFree);
  p2.add(p2.row(22, kind::kDevice, api::kCudaMalloc, S + 4 * M, 2 * M, 4, 2));
  p2.add(p2.row(23, kind::kManaged, api::kCudaMallocManaged, S + 8 * M, M, 5, 2));
  failed(p2, 24, kind::kDevice, api::kCuMemAlloc, 8 * M, 6, 1);

  const auto p3 = testing::start_process(w, 3, 5002);
  p3.add(p3.row(30, kind::kDevice, api::kCudaMalloc, S, 4 * M, 1, 1));
  p3.block(31, S, 4 * M, 2, 30, 4 * M, 4 * M);
  p3.free(31, 3, api::kC10ReportMemoryUsage, 0, 4 * M);
  p3.add(p3.row(32, kind::kDevice, api::kCudaMalloc, S + 8 * M, 2 * M, 4, 1));
  p3.block(33, S + 8 * M, 2 * M, 5, 32, 2 * M, 6 * M);
  failed(p3, 34, kind::kDevice, api::kCudaMalloc, 3 * M, 6, 1);
  for (std::int64_t upid = 1; upid <= 3; ++upid) w.end_process({upid, 2'000'000'000, 0, {}, true});
  ASSERT_TRUE(w.finish(&error)) << error;
}

std::vector<std::string> advice_ids(const OomRecord& oom) {
  std::vector<std::string> ids;
  for (const auto& a : oom.advice) ids.push_back(a.id);
  return ids;
}

std::uint64_t evidence(const OomRecord& oom, const std::string& id, const std::string& name) {
  for (const auto& a : oom.advice) {
    if (a.id != id) continue;
    for (const auto& [key, value] : a.evidence)
      if (key == name) return value;
  }
  ADD_FAILURE() << "no evidence " << name << " in advice " << id;
  return 0;
}

class OomReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_oom_trace(dir_ / "oom.db");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(dir_ / "oom.db", &failure);
    ASSERT_TRUE(trace_) << failure.message;
  }
  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

TEST_F(OomReportTest, EveryOutOfMemoryIsOneRecordInProcessAndSequenceOrder) {
  const auto ooms = analysis::build_oom_report(*trace_);
  ASSERT_EQ(ooms.size(), 4u);
  EXPECT_EQ(ooms[0].upid, 1);
  EXPECT_EQ(ooms[0].seq, 9u);
  EXPECT_EQ(ooms[0].api_name, "cudaMalloc");
  EXPECT_EQ(ooms[1].seq, 10u);
  EXPECT_EQ(ooms[1].api_name, "c10::reportOutOfMemoryToProfiler");
  EXPECT_EQ(ooms[1].kind_name, "block");
  EXPECT_EQ(ooms[1].pid, 5000u);
  EXPECT_EQ(ooms[1].tid, 5001u);
  EXPECT_EQ(ooms[1].time_ns, 1'010'000'000);
  EXPECT_EQ(ooms[1].requested_bytes, 6 * M);
  ASSERT_EQ(ooms[1].stack.size(), 2u);
  EXPECT_EQ(ooms[1].stack[0].function, "forward");
  EXPECT_EQ(ooms[2].upid, 2);
  EXPECT_EQ(ooms[2].api_name, "cuMemAlloc");
  EXPECT_EQ(ooms[3].upid, 3);
}

TEST_F(OomReportTest, TheFailuresAloneAreTheReportsOomsWithoutWhatWasLive) {
  const auto failures = analysis::find_out_of_memory_failures(*trace_);
  const auto ooms = analysis::build_oom_report(*trace_);
  ASSERT_EQ(failures.size(), ooms.size());
  for (std::size_t i = 0; i < ooms.size(); ++i) {
    EXPECT_EQ(failures[i].allocation.upid, ooms[i].upid);
    EXPECT_EQ(failures[i].allocation.alloc_seq, ooms[i].seq);
    EXPECT_EQ(failures[i].allocation.alloc_ns, ooms[i].time_ns);
  }
  const auto of_process_2 =
      analysis::find_out_of_memory_failures(*trace_, std::set<std::int64_t>{2});
  ASSERT_EQ(of_process_2.size(), 1u);
  EXPECT_EQ(of_process_2[0].allocation.size, 8 * M);
}

TEST_F(OomReportTest, BlockLevelOomShowsLiveBlocksGapsAndFragmentationAdvice) {
  const OomRecord oom = analysis::build_oom_report(*trace_)[1];
  // Live: the three blocks not freed before seq 10; the segment is the allocator's, and the
  // device allocation made after the OOM was not live yet.
  EXPECT_EQ(oom.live.total_bytes, 12 * M);
  EXPECT_EQ(oom.live.total_count, 3u);
  EXPECT_EQ(oom.live.bytes_by_kind, (std::map<std::string, std::uint64_t>{{"block", 12 * M}}));
  ASSERT_EQ(oom.live.top.size(), 1u);
  EXPECT_EQ(oom.live.top[0].callsite_id, 2);
  EXPECT_EQ(oom.live.top[0].count, 3u);
  ASSERT_TRUE(oom.allocator);
  const auto& a = *oom.allocator;
  EXPECT_EQ(a.allocated, 12 * M);
  EXPECT_EQ(a.reserved, 20 * M);
  EXPECT_EQ(a.live_block_bytes, 12 * M);
  EXPECT_EQ(a.segment_bytes, 20 * M);
  EXPECT_EQ(a.cached_bytes, 8 * M);
  EXPECT_EQ(a.total_free, 8 * M);
  EXPECT_EQ(a.largest_free_gap, 4 * M);
  EXPECT_EQ(a.releasable_bytes, 0u);
  EXPECT_DOUBLE_EQ(a.external_fragmentation, 0.5);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_EQ(a.segments[0].address, S);
  EXPECT_EQ(a.segments[0].size, 20 * M);
  EXPECT_EQ(a.segments[0].blocks, 3u);
  EXPECT_EQ(a.segments[0].free_gaps, (std::vector<std::uint64_t>{4 * M, 4 * M}));

  // 8M free >= 6M requested, but no gap of 6M: fragmentation. Live tensors (12M) outweigh the
  // cache (8M). An allocator OOM never gets the empty_cache advice.
  EXPECT_EQ(advice_ids(oom), (std::vector<std::string>{"fragmentation", "live_tensors"}));
  EXPECT_EQ(evidence(oom, "fragmentation", "requested_bytes"), 6 * M);
  EXPECT_EQ(evidence(oom, "fragmentation", "total_free"), 8 * M);
  EXPECT_EQ(evidence(oom, "fragmentation", "largest_free_gap"), 4 * M);
  EXPECT_NE(oom.advice[0].text.find("expandable_segments:True"), std::string::npos);
  EXPECT_EQ(evidence(oom, "live_tensors", "top_callsite_bytes"), 12 * M);
  EXPECT_NE(oom.advice[1].text.find("forward (model.py:42)"), std::string::npos);
}

TEST_F(OomReportTest, ARuntimeFailureTakesTheAllocatorsLatestTotalsBeforeIt) {
  const OomRecord oom = analysis::build_oom_report(*trace_)[0];
  ASSERT_TRUE(oom.allocator);
  EXPECT_EQ(oom.allocator->allocated, 12 * M);  // the free at seq 8
  EXPECT_EQ(oom.allocator->reserved, 20 * M);
  EXPECT_EQ(advice_ids(oom), (std::vector<std::string>{"fragmentation", "live_tensors"}));
}

TEST_F(OomReportTest, SegmentLevelOomListsTheLiveCallsites) {
  const OomRecord oom = analysis::build_oom_report(*trace_)[2];
  EXPECT_FALSE(oom.allocator);
  EXPECT_EQ(oom.requested_bytes, 8 * M);
  EXPECT_EQ(oom.live.total_bytes, 6 * M);
  EXPECT_EQ(oom.live.total_count, 3u);
  EXPECT_EQ(oom.live.bytes_by_kind,
            (std::map<std::string, std::uint64_t>{{"device", 5 * M}, {"managed", M}}));
  ASSERT_EQ(oom.live.top.size(), 3u);
  EXPECT_EQ(oom.live.top[0].bytes, 3 * M);
  EXPECT_EQ(oom.live.top[0].callsite_id, 1);
  EXPECT_EQ(oom.live.top[1].bytes, 2 * M);
  EXPECT_EQ(oom.live.top[2].kind_name, "managed");
  EXPECT_EQ(advice_ids(oom), (std::vector<std::string>{"top_callsites"}));
  EXPECT_EQ(evidence(oom, "top_callsites", "top_callsite_bytes"), 3 * M);
  EXPECT_EQ(evidence(oom, "top_callsites", "live_bytes"), 6 * M);
}

TEST_F(OomReportTest, AProgramsOwnFailureBesideUnusedCacheGetsTheEmptyCacheAdviceOnly) {
  const OomRecord oom = analysis::build_oom_report(*trace_)[3];
  ASSERT_TRUE(oom.allocator);
  EXPECT_EQ(oom.allocator->releasable_bytes, 4 * M);
  EXPECT_EQ(oom.allocator->largest_free_gap, 4 * M);  // fits the 3M: not fragmentation
  EXPECT_EQ(oom.allocator->live_block_bytes, 2 * M);  // less than the 4M cached
  EXPECT_EQ(oom.allocator->allocated, 2 * M);
  EXPECT_EQ(oom.allocator->reserved, 6 * M);
  EXPECT_EQ(advice_ids(oom), (std::vector<std::string>{"cache_held"}));
  EXPECT_EQ(evidence(oom, "cache_held", "releasable_bytes"), 4 * M);
}

TEST_F(OomReportTest, TopCutsTheListedGroupsAndFiltersSelectProcesses) {
  analysis::OomReportOptions options;
  options.top = 1;
  options.processes = std::set<std::int64_t>{2};
  const auto ooms = analysis::build_oom_report(*trace_, options);
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0].pid, 5001u);
  EXPECT_EQ(ooms[0].live.top.size(), 1u);
  EXPECT_EQ(ooms[0].live.groups, 3u);
  EXPECT_EQ(ooms[0].live.total_bytes, 6 * M);  // totals count every group
}

}  // namespace
}  // namespace vramtrace
