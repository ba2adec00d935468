// A trace is untrusted input (docs/security.md): times that cannot be right (before their
// process started, after it ended, a free before its allocation) and callsites whose parents
// loop. The time index builds and counts the times in time_problem, and the warnings name them;
// a stack stops at a cycle or at TraceReader::kMaxStackDepth with a frame marking the cut, and
// the callsite trees over such stacks are built.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/peak_report.h"
#include "analysis/reports/trace_warnings.h"
#include "analysis/time/moment.h"
#include "analysis/time/report_time_index.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "synthetic_trace.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;
using testing::kMiB;

std::unique_ptr<storage::TraceReader> open_trace(const std::filesystem::path& path) {
  storage::OpenFailure failure;
  auto trace = storage::TraceReader::open(path, &failure);
  EXPECT_NE(trace, nullptr) << failure.message;
  return trace;
}

bool has_warning(const std::vector<std::string>& warnings, const std::string& part) {
  return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& warning) {
    return warning.find(part) != std::string::npos;
  });
}

std::vector<std::string> functions(const std::vector<storage::StackFrame>& stack) {
  std::vector<std::string> names;
  for (const storage::StackFrame& frame : stack) names.push_back(frame.function.value_or("??"));
  return names;
}

TEST(UntrustedTimes, TheIndexBuildsAndCountsEachProblem) {
  testing::TempDir dir;
  const auto path = dir / "times.db";
  ASSERT_EQ(testing::write_untrusted_times_trace(path), "");
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  std::unique_ptr<storage::TimeIndex> index;
  ASSERT_NO_THROW(index = analysis::open_time_index(*trace));
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->note(), "");  // kept in the file
  const std::vector<storage::TimeProblem> problems = index->time_problems();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].problem, storage::kTimeAfterProcessEnd);
  EXPECT_EQ(problems[0].events, 1u);
  EXPECT_EQ(problems[0].first_seq, 7u);
  EXPECT_EQ(problems[1].problem, storage::kTimeBeforeProcessStart);
  EXPECT_EQ(problems[1].events, 1u);
  EXPECT_EQ(problems[1].first_seq, 3u);
  EXPECT_EQ(problems[2].problem, storage::kTimeOutOfOrder);
  EXPECT_EQ(problems[2].events, 1u);
  EXPECT_EQ(problems[2].first_seq, 6u);
  for (const storage::TimeProblem& problem : problems) EXPECT_EQ(problem.upid, 1);
  // The span is the process's: the early time is taken as its start, the late one as its end.
  EXPECT_EQ(index->start_ns(), kSecond);
  EXPECT_EQ(index->end_ns(), 3 * kSecond);
  const std::vector<storage::LiveBytesPeak> peaks = index->peaks();
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].bytes, 4 * kMiB);
  EXPECT_EQ(peaks[0].seq, 4u);
  // One row per slice, whatever order the events came in.
  const std::vector<storage::LiveBytesBucket> buckets = index->buckets();
  for (std::size_t i = 1; i < buckets.size(); ++i)
    EXPECT_LT(buckets[i - 1].bucket, buckets[i].bucket);
  for (const storage::LiveBytesBucket& bucket : buckets)
    EXPECT_LE(bucket.max_bytes, 4 * kMiB) << bucket.bucket;
}

TEST(UntrustedTimes, WarningsNameEachProblemFromAKeptOrAGivenIndex) {
  testing::TempDir dir;
  const auto path = dir / "times.db";
  ASSERT_EQ(testing::write_untrusted_times_trace(path), "");
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  const std::vector<std::string> warnings = analysis::trace_warnings(*trace);
  EXPECT_TRUE(has_warning(warnings,
                          "process 7000 (/usr/bin/leaky): 1 event timed before the process "
                          "started (time_problem before_process_start, the first at seq 3)"))
      << ::testing::PrintToString(warnings);
  EXPECT_TRUE(has_warning(warnings, "time_problem after_process_end, the first at seq 7"));
  EXPECT_TRUE(has_warning(warnings, "time_problem out_of_order, the first at seq 6"));
  // A process left out by the filter is not warned of.
  EXPECT_FALSE(
      has_warning(analysis::trace_warnings(*trace, std::set<std::int64_t>{2}), "time_problem"));
  // The leak report at a moment, with its index.
  const auto index = analysis::open_time_index(*trace);
  const analysis::LeakReport leaks =
      analysis::build_leak_report_at(*trace, *index, analysis::parse_moment("peak"), {}, {});
  EXPECT_TRUE(has_warning(leaks.warnings, "time_problem before_process_start"));
  EXPECT_EQ(leaks.total_bytes, 4 * kMiB);  // a1, a2, a3, a4 at seq 4
}

TEST(UntrustedTimes, ASoundTraceHasNoProblems) {
  testing::TempDir dir;
  const auto path = dir / "synthetic.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  EXPECT_TRUE(analysis::open_time_index(*trace)->time_problems().empty());
  EXPECT_FALSE(has_warning(analysis::trace_warnings(*trace), "time_problem"));
}

TEST(UntrustedCallsites, AStackStopsAtACycleWithAMark) {
  testing::TempDir dir;
  const auto path = dir / "cycle.db";
  ASSERT_EQ(testing::write_callsite_cycle_trace(path), "");
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  const std::string mark = "[stack cut: its callsites loop back in the trace]";
  const auto two = trace->stack(2);
  EXPECT_EQ(functions(two), (std::vector<std::string>{"loop_a", "loop_b", mark}));
  EXPECT_EQ(two.back().cut, storage::StackCut::kCycle);
  EXPECT_EQ(two.front().cut, storage::StackCut::kNone);
  const auto self = trace->stack(4);
  EXPECT_EQ(functions(self), (std::vector<std::string>{"self_loop", mark}));
  EXPECT_EQ(self.back().cut, storage::StackCut::kCycle);
  const auto sound = trace->stack(1);
  ASSERT_EQ(sound.size(), 1u);
  EXPECT_EQ(sound[0].cut, storage::StackCut::kNone);
}

TEST(UntrustedCallsites, AChainDeeperThanTheLimitIsCutThere) {
  testing::TempDir dir;
  const auto path = dir / "deep.db";
  {
    std::string error;
    auto writer = storage::TraceWriter::create(path, &error);
    ASSERT_NE(writer, nullptr) << error;
    const testing::ProcessWriter process = testing::start_process(*writer, 1, 4000);
    writer->add_module(1, "/work/train.py", "");
    writer->add_frame({1, 1, 0x10, "recurse", "deep.py", 1, false});
    const std::int64_t depth = storage::TraceReader::kMaxStackDepth + 10;
    for (std::int64_t id = 1; id <= depth; ++id)
      writer->add_callsite(id, id == 1 ? std::nullopt : std::optional<std::int64_t>(id - 1), 1,
                           static_cast<int>(id - 1));
    process.add(process.row(1, storage::allocation_kind::kDevice, storage::api::kCudaMalloc,
                            0x7f0000000000, kMiB, 1, depth));
    ASSERT_TRUE(writer->finish(&error)) << error;
  }
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  const auto stack = trace->stack(storage::TraceReader::kMaxStackDepth + 10);
  ASSERT_EQ(stack.size(), storage::TraceReader::kMaxStackDepth + 1);
  EXPECT_EQ(stack.back().cut, storage::StackCut::kTooDeep);
  EXPECT_EQ(*stack.back().function, "[stack cut: deeper than 4096 frames]");
  EXPECT_EQ(stack[stack.size() - 2].cut, storage::StackCut::kNone);
  // The trees over it are as deep as the stack, built without recursion.
  const analysis::LeakReport leaks = analysis::build_leak_report(*trace);
  ASSERT_EQ(leaks.groups.size(), 1u);
  const auto tree = analysis::build_leak_tree(leaks.groups, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(tree.size(), 1u);
  EXPECT_EQ(tree[0].frame.cut, storage::StackCut::kTooDeep);
}

TEST(UntrustedCallsites, PeakAndLeakTreesFinishAndShowTheCut) {
  testing::TempDir dir;
  const auto path = dir / "cycle.db";
  ASSERT_EQ(testing::write_callsite_cycle_trace(path), "");
  const auto trace = open_trace(path);
  ASSERT_NE(trace, nullptr);
  const auto index = analysis::open_time_index(*trace);
  const std::vector<analysis::DevicePeakAt> peaks = analysis::build_peak_report(*trace, *index, {});
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].bytes, 7 * kMiB);
  // Top-down, the outermost entry of a cut stack is its mark: two roots of marks (the 2-cycle
  // and the self-loop merge into one node, as the same place) and main.
  std::size_t marks = 0;
  for (const analysis::CallsiteNode& root : peaks[0].top_down)
    marks += root.frame.cut == storage::StackCut::kCycle ? 1 : 0;
  EXPECT_EQ(marks, 1u);
  EXPECT_EQ(peaks[0].top_down.size(), 2u);
  const analysis::LeakReport leaks = analysis::build_leak_report(*trace);
  ASSERT_EQ(leaks.groups.size(), 3u);
  for (const analysis::LeakGroup& group : leaks.groups) EXPECT_LE(group.stack.size(), 3u);
  const auto bottom_up =
      analysis::build_leak_tree(leaks.groups, analysis::TreeDirection::kBottomUp);
  EXPECT_EQ(bottom_up.size(), 3u);
}

}  // namespace
}  // namespace vramtrace
