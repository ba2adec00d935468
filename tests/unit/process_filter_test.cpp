// --pid, --rank and --host: which processes they select, alone and together, and that the
// leak report and the summary then cover those processes and no others.
#include <gtest/gtest.h>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/scope/process_filter.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

using testing::kMiB;
using Upids = std::set<std::int64_t>;

// Four processes of a job on two hosts; pids repeat across hosts, and one process recorded no
// rank. Each leaks one device allocation whose size tells it apart: upid N leaks 2^(N-1) MiB.
//   upid 1: pid 1000 on node-a, rank 0      upid 3: pid 1000 on node-b, rank 2
//   upid 2: pid 1001 on node-a, rank 1      upid 4: pid 1001 on node-b, no rank, incomplete
struct JobProcess {
  std::uint32_t pid;
  std::string host;
  std::optional<int> rank;
};
const std::vector<JobProcess> kJob{
    {1000, "node-a", 0}, {1001, "node-a", 1}, {1000, "node-b", 2}, {1001, "node-b", {}}};

std::uint64_t leaked_by(std::int64_t upid) {
  return kMiB << (upid - 1);
}

std::string write_job_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  if (!writer) return error;
  for (std::size_t i = 0; i < kJob.size(); ++i) {
    const auto upid = static_cast<std::int64_t>(i + 1);
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = kJob[i].pid;
    process.host = kJob[i].host;
    process.exe = "/usr/bin/python3";
    process.start_ns = upid * 1000;
    process.unwinder = "libunwind";
    process.rank = kJob[i].rank;
    writer->add_process(process);
    writer->add_thread(upid, upid, kJob[i].pid);
    storage::AllocationRow leak;
    leak.id = upid;
    leak.upid = upid;
    leak.kind = storage::allocation_kind::kDevice;
    leak.api = storage::api::kCudaMalloc;
    leak.address = 0x7f0000000000;
    leak.size = leaked_by(upid);
    leak.alloc_seq = 1;
    leak.alloc_ns = upid * 1000 + 10;
    leak.alloc_utid = upid;
    writer->add_allocation(leak);
    writer->end_process({upid, upid * 1000 + 100, 0, std::nullopt, upid != 4});
  }
  return writer->finish(&error) ? std::string() : error;
}

class ProcessFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = dir_ / "job.db";
    ASSERT_EQ(write_job_trace(path), "");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
  }

  ProcessSelection select(const ProcessFilter& filter) { return select_processes(*trace_, filter); }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

TEST_F(ProcessFilterTest, NoFilterSelectsEveryProcess) {
  EXPECT_TRUE(ProcessFilter{}.empty());
  EXPECT_FALSE(select({}).has_value());
  EXPECT_TRUE(is_selected(std::nullopt, 12345));
}

TEST_F(ProcessFilterTest, EachConditionAlone) {
  EXPECT_EQ(select({.pid = 1000}), (Upids{1, 3})) << "a pid on every host that has it";
  EXPECT_EQ(select({.rank = 2}), (Upids{3}));
  EXPECT_EQ(select({.rank = 0}), (Upids{1})) << "rank 0 is a rank, not 'no rank'";
  EXPECT_EQ(select({.host = "node-b"}), (Upids{3, 4}));
}

TEST_F(ProcessFilterTest, ConditionsCombineWithAnd) {
  EXPECT_EQ(select({.pid = 1001, .host = "node-b"}), (Upids{4}));
  EXPECT_EQ(select({.pid = 1000, .rank = 2, .host = "node-b"}), (Upids{3}));
  EXPECT_EQ(select({.pid = 1000, .rank = 1}), Upids{}) << "pid 1000 is never rank 1";
}

TEST_F(ProcessFilterTest, NoMatchIsAnEmptySelectionNotEverything) {
  const ProcessSelection none = select({.rank = 3});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(is_selected(none, 1));
  EXPECT_EQ(select({.host = "node-c"}), Upids{});
}

TEST_F(ProcessFilterTest, DescribesItselfAsTheCommandLineDoes) {
  EXPECT_EQ((ProcessFilter{.pid = 1000, .rank = 2, .host = "node-b"}).describe(),
            "--pid 1000 --rank 2 --host node-b");
  EXPECT_EQ((ProcessFilter{.rank = 3}).describe(), "--rank 3");
  EXPECT_EQ(ProcessFilter{}.describe(), "");
}

TEST_F(ProcessFilterTest, TheLeakReportCoversTheSelectedProcessesOnly) {
  LeakReportOptions options;
  options.processes = select({.host = "node-b"});
  const LeakReport report = build_leak_report(*trace_, options);
  EXPECT_EQ(report.total_bytes, leaked_by(3) + leaked_by(4));
  EXPECT_EQ(report.total_count, 2u);
  ASSERT_EQ(report.warnings.size(), 1u);  // upid 4 is incomplete
  EXPECT_NE(report.warnings[0].find("process 1001 on node-b"), std::string::npos)
      << report.warnings[0];

  options.processes = select({.rank = 0});
  const LeakReport rank0 = build_leak_report(*trace_, options);
  EXPECT_EQ(rank0.total_bytes, leaked_by(1));
  EXPECT_TRUE(rank0.warnings.empty()) << "the incomplete process was not selected";

  EXPECT_EQ(build_leak_report(*trace_).total_bytes,
            leaked_by(1) + leaked_by(2) + leaked_by(3) + leaked_by(4));
}

TEST_F(ProcessFilterTest, TheSummaryCoversTheSelectedProcessesOnly) {
  SummaryOptions options;
  options.processes = select({.pid = 1000});
  const Summary summary = build_summary(*trace_, options);
  ASSERT_EQ(summary.processes.size(), 2u);
  EXPECT_EQ(summary.processes[0].start.upid, 1);
  EXPECT_EQ(summary.processes[1].start.upid, 3);
  ASSERT_EQ(summary.kinds.size(), 1u);
  EXPECT_EQ(summary.kinds[0].allocations, 2u);
  EXPECT_EQ(summary.kinds[0].live_bytes, leaked_by(1) + leaked_by(3));
  ASSERT_EQ(summary.peaks.size(), 2u);
  EXPECT_EQ(summary.peaks[0].upid, 1);
  EXPECT_EQ(summary.peaks[1].upid, 3);
  EXPECT_EQ(summary.peaks[1].bytes, leaked_by(3));
  // From the first selected process's start to the last one's end.
  EXPECT_EQ(summary.start_ns, 1000);
  EXPECT_EQ(summary.end_ns, 3100);
  EXPECT_TRUE(summary.warnings.empty()) << summary.warnings.front();
}

}  // namespace
}  // namespace vramtrace::analysis
