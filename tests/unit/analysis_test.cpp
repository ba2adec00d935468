// The leak report and the summary over the synthetic trace of synthetic_trace.h, whose table
// gives every number expected here.
#include <gtest/gtest.h>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/time/device_peaks.h"
#include "analysis/values/cuda_errors.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

using testing::kGiB;
using testing::kKiB;
using testing::kMiB;
namespace kind = storage::allocation_kind;

class AnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = dir_ / "synthetic.db";
    ASSERT_EQ(testing::write_synthetic_trace(path), "");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

// The functions of a stack, innermost first; "??" for an unknown one.
std::vector<std::string> functions(const LeakGroup& group) {
  std::vector<std::string> names;
  for (const auto& frame : group.stack) names.push_back(frame.function.value_or("??"));
  return names;
}

TEST_F(AnalysisTest, LeaksAreGroupedByStackAndKindLargestFirst) {
  const LeakReport report = build_leak_report(*trace_);
  EXPECT_TRUE(report.trace_complete);
  EXPECT_EQ(report.total_bytes, 20 * kMiB + 512 * kKiB);
  EXPECT_EQ(report.total_count, 8u);
  ASSERT_EQ(report.groups.size(), 5u);

  const LeakGroup& pinned = report.groups[0];
  EXPECT_EQ(pinned.callsite_id, 4);
  EXPECT_EQ(pinned.kind, kind::kHostPinned);
  EXPECT_EQ(pinned.kind_name, "host_pinned");
  EXPECT_EQ(pinned.bytes, 8 * kMiB);
  EXPECT_EQ(pinned.count, 1u);
  EXPECT_EQ(functions(pinned), (std::vector<std::string>{"make_pinned", "main"}));

  // a2 and a3 (which reuses the freed a1's address); the failed a5 from the same stack is not
  // a leak, and neither is a1.
  const LeakGroup& device = report.groups[1];
  EXPECT_EQ(device.callsite_id, 3);
  EXPECT_EQ(device.kind_name, "device");
  EXPECT_EQ(device.bytes, 6 * kMiB);
  EXPECT_EQ(device.count, 2u);
  EXPECT_EQ(functions(device), (std::vector<std::string>{"inline_helper", "make_buffers", "main"}));
  EXPECT_TRUE(device.stack[0].inlined);
  EXPECT_EQ(device.stack[0].file, "helpers.h");
  EXPECT_EQ(device.stack[0].line, 7);
  EXPECT_EQ(device.stack[2].module, testing::kLeakyExe);

  // Two groups of 3 MiB: the one with more allocations comes first, though its id is higher.
  const LeakGroup& child = report.groups[2];
  EXPECT_EQ(child.callsite_id, 6);
  EXPECT_EQ(child.kind_name, "device");
  EXPECT_EQ(child.bytes, 3 * kMiB);
  EXPECT_EQ(child.count, 3u);
  EXPECT_EQ(functions(child), (std::vector<std::string>{"child_work", "make_buffers", "main"}));

  const LeakGroup& async = report.groups[3];
  EXPECT_EQ(async.callsite_id, 5);
  EXPECT_EQ(async.kind_name, "async");
  EXPECT_EQ(async.bytes, 3 * kMiB);
  EXPECT_EQ(async.count, 1u);
  EXPECT_EQ(functions(async), (std::vector<std::string>{"??", "make_pinned", "main"}));
  EXPECT_EQ(async.stack[0].module, testing::kTorchModule);
  EXPECT_EQ(async.stack[0].rel_pc, 0x5000u);
  EXPECT_FALSE(async.stack[0].file.has_value());

  // a8: its free failed and was cleared, so it is live; it has no stack.
  const LeakGroup& stackless = report.groups[4];
  EXPECT_FALSE(stackless.callsite_id.has_value());
  EXPECT_EQ(stackless.kind_name, "device");
  EXPECT_EQ(stackless.bytes, 512 * kKiB);
  EXPECT_EQ(stackless.count, 1u);
  EXPECT_TRUE(stackless.stack.empty());
}

TEST_F(AnalysisTest, ALeakReportCanBeLimitedToOneProcess) {
  LeakReportOptions options;
  options.upid = 2;
  const LeakReport report = build_leak_report(*trace_, options);
  EXPECT_EQ(report.total_bytes, 3 * kMiB);
  EXPECT_EQ(report.total_count, 3u);
  ASSERT_EQ(report.groups.size(), 1u);
  EXPECT_EQ(report.groups[0].callsite_id, 6);
}

TEST_F(AnalysisTest, WarningsNameTheUnfinishedProcessAndTheDataLoss) {
  const LeakReport report = build_leak_report(*trace_);
  ASSERT_EQ(report.warnings.size(), 2u);
  EXPECT_NE(report.warnings[0].find("process 4300"), std::string::npos) << report.warnings[0];
  EXPECT_NE(report.warnings[1].find("ring_overflow = 3"), std::string::npos) << report.warnings[1];
}

TEST(AnalysisIncompleteTraceTest, AnIncompleteTraceIsFlaggedAndWarnedAbout) {
  testing::TempDir dir;
  const auto path = dir / "incomplete.db";
  ASSERT_EQ(testing::write_synthetic_trace(path, /*finish=*/false), "");
  const auto trace = storage::TraceReader::open(path, nullptr);
  ASSERT_NE(trace, nullptr);
  const LeakReport report = build_leak_report(*trace);
  EXPECT_FALSE(report.trace_complete);
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("incomplete"), std::string::npos) << report.warnings[0];
  EXPECT_FALSE(build_summary(*trace).trace_complete);
}

TEST_F(AnalysisTest, SummaryTotalsPerKind) {
  const Summary summary = build_summary(*trace_);
  ASSERT_EQ(summary.kinds.size(), 3u);

  const KindTotals& device = summary.kinds[0];
  EXPECT_EQ(device.kind, kind::kDevice);
  EXPECT_EQ(device.name, "device");
  EXPECT_EQ(device.allocations, 9u);
  EXPECT_EQ(device.bytes_allocated, 28 * kMiB + 512 * kKiB);
  EXPECT_EQ(device.frees, 3u);
  EXPECT_EQ(device.bytes_freed, 19 * kMiB);
  EXPECT_EQ(device.failed_allocations, 1u);
  ASSERT_EQ(device.failures.size(), 1u);
  EXPECT_EQ(device.failures[0].result, 2);
  EXPECT_EQ(device.failures[0].count, 1u);
  EXPECT_EQ(device.live_count, 6u);
  EXPECT_EQ(device.live_bytes, 9 * kMiB + 512 * kKiB);

  const KindTotals& pinned = summary.kinds[1];
  EXPECT_EQ(pinned.name, "host_pinned");
  EXPECT_EQ(pinned.allocations, 1u);
  EXPECT_EQ(pinned.bytes_allocated, 8 * kMiB);
  EXPECT_EQ(pinned.frees, 0u);
  EXPECT_EQ(pinned.live_bytes, 8 * kMiB);
  EXPECT_EQ(pinned.failed_allocations, 0u);

  const KindTotals& async = summary.kinds[2];
  EXPECT_EQ(async.name, "async");
  EXPECT_EQ(async.allocations, 1u);
  EXPECT_EQ(async.live_count, 1u);
  EXPECT_EQ(async.live_bytes, 3 * kMiB);

  // Live bytes agree with the leak report.
  std::uint64_t live = 0;
  for (const KindTotals& totals : summary.kinds) live += totals.live_bytes;
  EXPECT_EQ(live, build_leak_report(*trace_).total_bytes);
}

TEST_F(AnalysisTest, SummaryPeaksPerProcessAndDevice) {
  const Summary summary = build_summary(*trace_);
  ASSERT_EQ(summary.peaks.size(), 3u);
  // upid 1, device 0: 1 + 4 - 1 + 2 + 16 = 22 MiB at a7 (seq 8). Pinned host memory (8 MiB)
  // and the failed 64 GiB do not count.
  EXPECT_EQ(summary.peaks[0].upid, 1);
  EXPECT_EQ(summary.peaks[0].pid, 4242u);
  EXPECT_EQ(summary.peaks[0].device, 0);
  EXPECT_EQ(summary.peaks[0].bytes, 22 * kMiB);
  EXPECT_EQ(summary.peaks[0].at_seq, 8u);
  EXPECT_EQ(summary.peaks[0].at_ns, 1'800'000'000);
  // upid 1, device 1: the async 3 MiB.
  EXPECT_EQ(summary.peaks[1].device, 1);
  EXPECT_EQ(summary.peaks[1].bytes, 3 * kMiB);
  EXPECT_EQ(summary.peaks[1].at_seq, 7u);
  // upid 2, device 0: 2 MiB freed, then three of 1 MiB; the first process's memory is not added.
  EXPECT_EQ(summary.peaks[2].upid, 2);
  EXPECT_EQ(summary.peaks[2].pid, 4300u);
  EXPECT_EQ(summary.peaks[2].bytes, 3 * kMiB);
  EXPECT_EQ(summary.peaks[2].at_seq, 5u);
  EXPECT_EQ(summary.peaks[2].at_ns, 2'500'000'000);
}

TEST_F(AnalysisTest, SummaryProcessesDurationBadFreesAndStats) {
  const Summary summary = build_summary(*trace_);
  EXPECT_TRUE(summary.trace_complete);
  EXPECT_EQ(summary.vramtrace_version, VRAMTRACE_VERSION);
  EXPECT_EQ(summary.command, (std::vector<std::string>{"leaky", "--size", "1 MiB"}));
  EXPECT_EQ(summary.start_ns, testing::kFirstStartNs);
  EXPECT_EQ(summary.end_ns, testing::kLastEndNs);
  EXPECT_EQ(summary.duration_ns, testing::kLastEndNs - testing::kFirstStartNs);

  ASSERT_EQ(summary.processes.size(), 2u);
  EXPECT_EQ(summary.processes[0].start.pid, 4242u);
  EXPECT_EQ(summary.processes[0].end.exit_status, 0);
  EXPECT_TRUE(summary.processes[0].end.complete);
  EXPECT_EQ(summary.processes[1].start.pid, 4300u);
  EXPECT_EQ(summary.processes[1].end.signal, 9);
  EXPECT_FALSE(summary.processes[1].end.complete);

  ASSERT_EQ(summary.bad_frees.size(), 2u);
  EXPECT_EQ(summary.bad_frees[0].reason, "call_failed");
  EXPECT_EQ(summary.bad_frees[0].count, 1u);
  EXPECT_EQ(summary.bad_frees[1].reason, "unknown_address");
  EXPECT_EQ(summary.bad_frees[1].count, 1u);

  ASSERT_EQ(summary.stats.size(), 2u);
  EXPECT_EQ(summary.stats[0].name, "ring_overflow");
  EXPECT_EQ(summary.stats[0].severity, storage::Severity::kDataLoss);
  EXPECT_EQ(summary.stats[1].name, "symbolization_failed");
  EXPECT_EQ(summary.warnings.size(), 2u);
}

TEST(DevicePeaksTest, OnlyDeviceResidentKindsCount) {
  EXPECT_TRUE(occupies_device_memory(kind::kDevice));
  EXPECT_TRUE(occupies_device_memory(kind::kManaged));
  EXPECT_TRUE(occupies_device_memory(kind::kAsync));
  EXPECT_FALSE(occupies_device_memory(kind::kHostPinned));
  EXPECT_FALSE(occupies_device_memory(kind::kUnknown));
}

TEST(CudaErrorsTest, NamesTheCodesAllocationsReturn) {
  EXPECT_EQ(cuda_error_name(2), "cudaErrorMemoryAllocation");
  EXPECT_EQ(cuda_error_name(1), "cudaErrorInvalidValue");
  EXPECT_EQ(cuda_error_name(999), "cudaErrorUnknown");
  EXPECT_FALSE(cuda_error_name(5000).has_value());
  EXPECT_FALSE(cuda_error_name(-1).has_value());
}

}  // namespace
}  // namespace vramtrace::analysis
