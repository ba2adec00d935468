// The trace advice of trace_advice.h, rule by rule: for each, a small hand-built trace whose
// numbers make it fire (with its evidence checked), and one a step away where it must not.
// One MiB = M; S = 0x7f0000000000; seq n happens at 1 s + n ms. Stacks (innermost first):
//   callsite 1: main (train.py:10)
//   callsite 2: forward (model.py:42), main
//   callsite 3: decorate_autocast (torch/amp/autocast_mode.py:44), main
#include "analysis/reports/trace_advice.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
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
using analysis::Advice;
using testing::ProcessWriter;

constexpr std::uint64_t M = 1024 * 1024;
constexpr std::uint64_t S = 0x7f0000000000;

class TraceAdviceTest : public ::testing::Test {
 protected:
  // Writes a trace with the stacks above and the rows `fill` adds, and returns its advice.
  std::vector<Advice> advice_of(const std::function<void(storage::TraceWriter&)>& fill) {
    const auto path = dir_ / ("t" + std::to_string(++traces_) + ".db");
    std::string error;
    auto writer = storage::TraceWriter::create(path, &error);
    EXPECT_TRUE(writer) << error;
    if (!writer) return {};
    storage::TraceWriter& w = *writer;
    testing::add_train_stacks(w);
    w.add_frame({3, 1, 0x30, "decorate_autocast", "torch/amp/autocast_mode.py", 44, false});
    w.add_callsite(3, 1, 3, 1);
    fill(w);
    EXPECT_TRUE(w.finish(&error)) << error;
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    EXPECT_TRUE(trace) << failure.message;
    return trace ? analysis::build_trace_advice(*trace) : std::vector<Advice>{};
  }

  testing::TempDir dir_;
  int traces_ = 0;
};

std::vector<std::string> ids(const std::vector<Advice>& advice) {
  std::vector<std::string> names;
  for (const Advice& a : advice) names.push_back(a.id);
  return names;
}

std::map<std::string, std::uint64_t> evidence(const std::vector<Advice>& advice,
                                              const std::string& id) {
  for (const Advice& a : advice)
    if (a.id == id) return {a.evidence.begin(), a.evidence.end()};
  ADD_FAILURE() << "no advice " << id;
  return {};
}

using Ids = std::vector<std::string>;

// A 20M segment at S (id 1, seq 1) and 4M blocks at the given offsets (ids 2.., seq
// first_seq..).
void segment_with_blocks(storage::TraceWriter& w, const std::vector<std::uint64_t>& offsets,
                         std::uint64_t first_seq = 2) {
  const ProcessWriter p = testing::start_process(w, 1, 5000);
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  for (std::size_t i = 0; i < offsets.size(); ++i)
    p.block(2 + static_cast<std::int64_t>(i), S + offsets[i], 4 * M, first_seq + i, 1);
}

TEST_F(TraceAdviceTest, GapsBetweenLiveTensorsAtThePeakAdviseExpandableSegments) {
  // Live 12M at S, S+8M, S+16M: free 4M + 4M, the largest gap 4M: fragmentation 0.5.
  const auto advice = advice_of([](auto& w) { segment_with_blocks(w, {0, 8 * M, 16 * M}); });
  ASSERT_EQ(ids(advice), Ids{"expandable_segments"});
  EXPECT_EQ(evidence(advice, "expandable_segments"),
            (std::map<std::string, std::uint64_t>{{"pid", 5000},
                                                  {"device", 0},
                                                  {"segment_bytes", 20 * M},
                                                  {"cached_bytes", 8 * M},
                                                  {"largest_free_gap", 4 * M},
                                                  {"segments", 1}}));
  EXPECT_DOUBLE_EQ(*advice[0].fraction, 0.5);
}

TEST_F(TraceAdviceTest, OneFreeGapIsNotFragmentation) {
  // Live 12M packed at the start: the 8M left is one gap.
  EXPECT_EQ(ids(advice_of([](auto& w) { segment_with_blocks(w, {0, 4 * M, 8 * M}); })), Ids{});
}

// Segment A 4M (id 1) whose block is freed, segment B 4M (id 3) with a live block; with
// `own_malloc`, the program then cudaMallocs 8M (id 5) beside the allocator's empty segment A.
void cache_beside(storage::TraceWriter& w, bool own_malloc) {
  const ProcessWriter p = testing::start_process(w, 1, 5000);
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 4 * M, 1, 1));
  p.block(2, S, 4 * M, 2, 1);
  p.free(2, 3, api::kC10ReportMemoryUsage);
  p.add(p.row(3, kind::kDevice, api::kCudaMalloc, S + 4 * M, 4 * M, 4, 1));
  p.block(4, S + 4 * M, 4 * M, 5, 3);
  if (own_malloc) p.add(p.row(5, kind::kDevice, api::kCudaMalloc, S + 64 * M, 8 * M, 6, 1));
}

TEST_F(TraceAdviceTest, EmptySegmentsBesideTheProgramsOwnMemoryAdviseEmptyCache) {
  const auto advice = advice_of([](auto& w) { cache_beside(w, true); });
  ASSERT_EQ(ids(advice), Ids{"empty_cache"});
  EXPECT_EQ(evidence(advice, "empty_cache"),
            (std::map<std::string, std::uint64_t>{{"pid", 5000},
                                                  {"device", 0},
                                                  {"device_peak_bytes", 16 * M},
                                                  {"releasable_bytes", 4 * M},
                                                  {"outside_allocator_bytes", 8 * M},
                                                  {"other_processes", 0}}));
}

TEST_F(TraceAdviceTest, CacheThatNothingElseWantsIsNoAdvice) {
  EXPECT_EQ(ids(advice_of([](auto& w) { cache_beside(w, false); })), Ids{});
}

TEST_F(TraceAdviceTest, ActivationsHeldFromTheForwardRangeAdviseCheckpointing) {
  // 'forward' from seq 2 to 6 allocates 12M (seq 3 to 5), all live at the peak (seq 5).
  const auto advice = advice_of([](auto& w) {
    segment_with_blocks(w, {0, 4 * M, 8 * M}, 3);
    ProcessWriter{w, 1}.range(1, "forward", 2, 6);
  });
  // The same range is also the outermost one, all of the peak grown inside it: micro-batches;
  // and no stack runs through autocast: mixed precision.
  ASSERT_EQ(ids(advice), (Ids{"activation_checkpointing", "micro_batches", "mixed_precision"}));
  EXPECT_EQ(evidence(advice, "activation_checkpointing"),
            (std::map<std::string, std::uint64_t>{{"pid", 5000},
                                                  {"device", 0},
                                                  {"peak_live_block_bytes", 12 * M},
                                                  {"forward_bytes", 12 * M},
                                                  {"forward_blocks", 3}}));
}

TEST_F(TraceAdviceTest, LittleAllocatedInForwardIsNotActivations) {
  // 12M before 'forward' (seq 5 to 7), which adds 1M: 1M of a 13M peak.
  const auto advice = advice_of([](auto& w) {
    segment_with_blocks(w, {0, 4 * M, 8 * M});
    const ProcessWriter p{w, 1};
    p.range(1, "forward", 5, 7);
    p.block(5, S + 12 * M, M, 6, 1);
  });
  EXPECT_EQ(ids(advice), Ids{});
}

// Range 'step 0' (seq 2 to 9) holds the peak: 4M live before it, 12M allocated inside it.
void step_with_growth(storage::TraceWriter& w, std::int64_t callsite) {
  const ProcessWriter p = testing::start_process(w, 1, 5000);
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  p.block(2, S, 4 * M, 2, 1, {}, {}, callsite);
  p.range(1, "step 0", 3, 9);
  for (std::int64_t i = 0; i < 3; ++i)
    p.block(3 + i, S + static_cast<std::uint64_t>(4 + 4 * i) * M, 4 * M,
            4 + static_cast<std::uint64_t>(i), 1, {}, {}, callsite);
}

TEST_F(TraceAdviceTest, APeakGrownWithinTheIterationAdvisesMicroBatchesAndMixedPrecision) {
  const auto advice = advice_of([](auto& w) { step_with_growth(w, 2); });
  ASSERT_EQ(ids(advice), (Ids{"micro_batches", "mixed_precision"}));
  EXPECT_EQ(evidence(advice, "micro_batches"),
            (std::map<std::string, std::uint64_t>{{"pid", 5000},
                                                  {"device", 0},
                                                  {"peak_live_block_bytes", 16 * M},
                                                  {"bytes_at_range_start", 4 * M},
                                                  {"grown_in_range_bytes", 12 * M}}));
  EXPECT_EQ(evidence(advice, "mixed_precision").at("stacks_checked"), 1u);
}

TEST_F(TraceAdviceTest, AutocastOnTheStacksSilencesMixedPrecision) {
  EXPECT_EQ(ids(advice_of([](auto& w) { step_with_growth(w, 3); })), Ids{"micro_batches"});
}

TEST_F(TraceAdviceTest, WithoutRangesThereIsNoIterationToSplit) {
  const auto advice = advice_of([](auto& w) { segment_with_blocks(w, {0, 4 * M, 8 * M}); });
  EXPECT_EQ(ids(advice), Ids{});
}

// 'train' (seq 1 to 7) grows 8M and frees it; 'evaluate' (seq 8 to 14) grows eval_bytes x 2.
void train_then_evaluate(storage::TraceWriter& w, std::uint64_t eval_bytes) {
  const ProcessWriter p = testing::start_process(w, 1, 5000);
  p.range(1, "train", 1, 7);
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 2, 1));
  p.block(2, S, 4 * M, 3, 1);
  p.block(3, S + 4 * M, 4 * M, 4, 1);
  p.free(2, 5, api::kC10ReportMemoryUsage);
  p.free(3, 6, api::kC10ReportMemoryUsage);
  p.range(2, "evaluate", 8, 14);
  p.block(4, S, eval_bytes, 9, 1);
  p.block(5, S + 4 * M, eval_bytes, 10, 1);
  p.free(4, 11, api::kC10ReportMemoryUsage);
  p.free(5, 12, api::kC10ReportMemoryUsage);
}

TEST_F(TraceAdviceTest, EvaluationGrowingLikeTrainingAdvisesNoGrad) {
  const auto advice = advice_of([](auto& w) { train_then_evaluate(w, 4 * M); });
  // 'train' also holds the peak, grown inside it: micro-batches and mixed precision as well.
  ASSERT_EQ(ids(advice), (Ids{"micro_batches", "mixed_precision", "no_grad_in_evaluation"}));
  EXPECT_EQ(
      evidence(advice, "no_grad_in_evaluation"),
      (std::map<std::string, std::uint64_t>{
          {"pid", 5000}, {"evaluation_growth_bytes", 8 * M}, {"training_growth_bytes", 8 * M}}));
}

TEST_F(TraceAdviceTest, EvaluationThatGrowsLittleIsNoAdvice) {
  const auto advice = advice_of([](auto& w) { train_then_evaluate(w, M); });
  EXPECT_EQ(ids(advice), (Ids{"micro_batches", "mixed_precision"}));
}

void pinned(storage::TraceWriter& w, std::uint64_t bytes) {
  const ProcessWriter p = testing::start_process(w, 1, 5000);
  p.add(p.row(1, kind::kHostPinned, api::kCudaHostAlloc, S, bytes / 2, 1, 1));
  p.add(p.row(2, kind::kHostPinned, api::kCudaHostAlloc, S + bytes, bytes / 2, 2, 1));
}

TEST_F(TraceAdviceTest, AGibOfPinnedMemoryAdvisesLimits) {
  const auto advice = advice_of([](auto& w) { pinned(w, 1024 * M); });
  ASSERT_EQ(ids(advice), Ids{"pinned_memory"});
  EXPECT_EQ(evidence(advice, "pinned_memory"),
            (std::map<std::string, std::uint64_t>{
                {"pid", 5000}, {"pinned_peak_bytes", 1024 * M}, {"pinned_allocations", 2}}));
}

TEST_F(TraceAdviceTest, LessPinnedMemoryIsNoAdvice) {
  EXPECT_EQ(ids(advice_of([](auto& w) { pinned(w, 1022 * M); })), Ids{});
}

}  // namespace
}  // namespace vramtrace
