// A Python program ends before its process does: the interpreter's teardown frees what the
// program still held. The shim marks where ("python finalizing", source shim); the reports'
// "live at the end" is what was live there, read from the whole trace or from the time index.
//
// upid 1 (pid 7000), Python, finalizing at seq 10 (M = one MiB, S = 0x7f0000000000):
//   id 1  device 20M @S, seq 1, freed at 14 (the teardown)      live at the program's end
//   id 2  block 4M @S in 1, seq 2, freed at 12 (the teardown)   live at the program's end
//   id 3  block 2M @S+4M in 1, seq 3, freed at 5 (the program)  not
//   id 4  block 1M @S+6M in 1, seq 4, never freed               live at the program's end
//   id 5  block 1M @S+7M in 1, seq 11 (the teardown), freed 13  not: made after the end
// upid 2 (pid 7001), no marker: the end of the trace.
//   id 20 device 3M, seq 1, freed at 12                          not
//   id 21 device 1M, seq 2, never freed                          live at the end
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/time/device_peaks.h"
#include "proto/shim_markers.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace {
namespace {

namespace kind = storage::allocation_kind;
namespace api = storage::api;
constexpr std::uint64_t M = 1024 * 1024;
constexpr std::uint64_t S = 0x7f0000000000;

void write_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_TRUE(writer) << error;
  storage::TraceWriter& w = *writer;
  testing::add_train_stacks(w);
  const auto p1 = testing::start_process(w, 1, 7000);
  p1.add(p1.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  p1.block(2, S, 4 * M, 2, 1);
  p1.block(3, S + 4 * M, 2 * M, 3, 1);
  p1.block(4, S + 6 * M, M, 4, 1);
  p1.free(3, 5, api::kC10ReportMemoryUsage);
  storage::MarkerRow finalizing;
  finalizing.id = 1;
  finalizing.upid = 1;
  finalizing.utid = 1;
  finalizing.type = std::string(storage::kMarkerMark);
  finalizing.source = std::string(storage::kMarkerFromShim);
  finalizing.name = wire_markers::kPythonFinalizing;
  finalizing.start_seq = 10;
  finalizing.start_ns = testing::ns_of_seq(10);
  w.add_marker(finalizing);
  p1.block(5, S + 7 * M, M, 11, 1);
  p1.free(2, 12, api::kC10ReportMemoryUsage);
  p1.free(5, 13, api::kC10ReportMemoryUsage);
  p1.free(1, 14, api::kCudaFree);

  const auto p2 = testing::start_process(w, 2, 7001);
  p2.add(p2.row(20, kind::kDevice, api::kCudaMalloc, S + 64 * M, 3 * M, 1, 1));
  p2.add(p2.row(21, kind::kDevice, api::kCudaMalloc, S + 68 * M, M, 2, 1));
  p2.free(20, 12, api::kCudaFree);
  for (std::int64_t upid = 1; upid <= 2; ++upid) w.end_process({upid, 2'000'000'000, 0, {}, true});
  ASSERT_TRUE(w.finish(&error)) << error;
}

class ProgramEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "python.db";
    write_trace(path_);
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path_, &failure);
    ASSERT_TRUE(trace_) << failure.message;
  }

  std::set<std::int64_t> live_at_end_ids() const {
    storage::AllocationFilter filter;
    filter.lifetime = storage::AllocationFilter::Lifetime::kLiveAtEnd;
    std::set<std::int64_t> ids;
    for (const auto& record : trace_->allocations(filter)) {
      EXPECT_TRUE(trace_->live_at_program_end(record)) << record.allocation.id;
      ids.insert(record.allocation.id);
    }
    return ids;
  }

  testing::TempDir dir_;
  std::filesystem::path path_;
  std::unique_ptr<storage::TraceReader> trace_;
};

TEST_F(ProgramEndTest, TheFinalizingMarkerIsTheProgramsEnd) {
  EXPECT_EQ(trace_->program_end_seq(1), 10u);
  EXPECT_FALSE(trace_->program_end_seq(2).has_value());
}

TEST_F(ProgramEndTest, LiveAtTheEndIsWhatTheProgramStillHeld) {
  EXPECT_EQ(live_at_end_ids(), (std::set<std::int64_t>{1, 2, 4, 21}));
  for (const auto& record : trace_->allocations({})) {
    const std::int64_t id = record.allocation.id;
    const bool expected = id == 1 || id == 2 || id == 4 || id == 21;
    EXPECT_EQ(trace_->live_at_program_end(record), expected) << id;
  }
}

TEST_F(ProgramEndTest, LeakReportsFromTheTraceAndFromTheIndexAgree) {
  const analysis::LeakReport scanned = analysis::build_leak_report(*trace_);
  EXPECT_EQ(scanned.ended_at_python_finalizing, std::vector<std::int64_t>{1});
  std::string error;
  const auto index = storage::TimeIndex::open(path_, storage::build_live_bytes_rollups, &error);
  ASSERT_TRUE(index) << error;
  const analysis::LeakReport indexed = analysis::build_leak_report_at(*trace_, *index, {}, {});
  EXPECT_EQ(indexed.ended_at_python_finalizing, std::vector<std::int64_t>{1});
  for (const analysis::LeakReport* report : {&scanned, &indexed}) {
    // Blocks 2 and 4 of upid 1 (5M), upid 2's device allocation (1M) at the segment level;
    // segment 1 holds blocks, so it is cache, not a leak.
    EXPECT_EQ(report->total_bytes, 5 * M + M) << (report == &scanned ? "scanned" : "indexed");
    EXPECT_EQ(report->total_count, 3u);
    EXPECT_EQ(report->cached.count, 1u);
    EXPECT_EQ(report->cached.bytes, 20 * M - 5 * M);
  }
}

TEST_F(ProgramEndTest, TheSummarysLiveColumnsAreLiveAtTheProgramsEnd) {
  const analysis::Summary summary = analysis::build_summary(*trace_, {});
  EXPECT_EQ(summary.ended_at_python_finalizing, std::vector<std::int64_t>{1});
  bool saw_blocks = false;
  bool saw_devices = false;
  for (const analysis::KindTotals& kind : summary.kinds) {
    if (kind.kind == storage::allocation_kind::kBlock) {
      saw_blocks = true;
      EXPECT_EQ(kind.frees, 3u);  // every free happened, the teardown's included
      EXPECT_EQ(kind.live_count, 2u);
      EXPECT_EQ(kind.live_bytes, 5 * M);
    } else if (kind.kind == storage::allocation_kind::kDevice) {
      saw_devices = true;
      EXPECT_EQ(kind.live_count, 2u);  // upid 1's segment, freed by the teardown; upid 2's
      EXPECT_EQ(kind.live_bytes, 21 * M);
    }
  }
  EXPECT_TRUE(saw_blocks);
  EXPECT_TRUE(saw_devices);
}

}  // namespace
}  // namespace vramtrace
