// The driver's virtual memory API in the reports, over the node trace of synthetic_trace.h:
// reservations, handles and mappings reported apart; only mappings count as device memory in
// use; each left live is a leak of its own kind. And markers change nothing in either report.
#include <gtest/gtest.h>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/time/device_peaks.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

using testing::kGiB;
using testing::kMiB;
namespace kind = storage::allocation_kind;

class VirtualMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = dir_ / "node.db";
    testing::NodeTraceSpec spec;
    spec.first_rank = 0;  // ranks 0 and 1: upid 2 leaks 2 MiB more
    ASSERT_EQ(testing::write_node_trace(path, spec), "");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

TEST(DevicePeaksVmmTest, OnlyMappingsOfTheVirtualMemoryApiCount) {
  EXPECT_TRUE(occupies_device_memory(kind::kVmmMapping));
  EXPECT_FALSE(occupies_device_memory(kind::kVmmReservation));
  EXPECT_FALSE(occupies_device_memory(kind::kVmmHandle));
}

TEST_F(VirtualMemoryTest, TheSummaryReportsTheThreeLayersApart) {
  const Summary summary = build_summary(*trace_);
  const VirtualMemoryTotals& vmm = summary.virtual_memory;
  EXPECT_TRUE(vmm.any());

  EXPECT_EQ(vmm.reserved.kind, kind::kVmmReservation);
  EXPECT_EQ(vmm.reserved.name, "vmm_reservation");
  EXPECT_EQ(vmm.reserved.allocations, 2u);
  EXPECT_EQ(vmm.reserved.bytes_allocated, 2 * kGiB);
  EXPECT_EQ(vmm.reserved.frees, 0u);
  EXPECT_EQ(vmm.reserved.live_count, 2u);
  EXPECT_EQ(vmm.reserved.live_bytes, 2 * kGiB);

  EXPECT_EQ(vmm.created.name, "vmm_handle");
  EXPECT_EQ(vmm.created.allocations, 4u);
  EXPECT_EQ(vmm.created.bytes_allocated, 2 * 96 * kMiB);
  EXPECT_EQ(vmm.created.frees, 2u);
  EXPECT_EQ(vmm.created.bytes_freed, 2 * 32 * kMiB);
  EXPECT_EQ(vmm.created.live_bytes, 2 * 64 * kMiB);

  EXPECT_EQ(vmm.mapped.name, "vmm_mapping");
  EXPECT_EQ(vmm.mapped.allocations, 4u);
  EXPECT_EQ(vmm.mapped.bytes_allocated, 2 * 96 * kMiB);
  EXPECT_EQ(vmm.mapped.live_count, 2u);
  EXPECT_EQ(vmm.mapped.live_bytes, 2 * 64 * kMiB);

  // They are also kinds of their own, after device.
  std::vector<std::string> kinds;
  for (const KindTotals& totals : summary.kinds) kinds.push_back(totals.name);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"device", "vmm_reservation", "vmm_handle", "vmm_mapping"}));
}

TEST_F(VirtualMemoryTest, PeaksCountMappingsButNeitherReservationsNorHandles) {
  const Summary summary = build_summary(*trace_);
  ASSERT_EQ(summary.peaks.size(), 2u);
  for (const DevicePeak& peak : summary.peaks) {
    SCOPED_TRACE("upid " + std::to_string(peak.upid));
    // 64 MiB mapped + 32 MiB mapped at seq 7, after the 8 MiB device buffer was freed. With
    // handles it would be 64 + 64 + 8 = 136 MiB by seq 4; with the reservation, over 1 GiB.
    EXPECT_EQ(peak.device, 0);
    EXPECT_EQ(peak.bytes, 96 * kMiB);
    EXPECT_EQ(peak.at_seq, 7u);
  }
  EXPECT_EQ(summary.peaks[0].pid, testing::kNodeFirstPid);
  EXPECT_EQ(summary.peaks[1].pid, testing::kNodeFirstPid + 1);
}

TEST_F(VirtualMemoryTest, ReservationsHandlesAndMappingsLeakAsKindsOfTheirOwn) {
  LeakReportOptions merge_ranks;  // the node's two ranks' stacks added up
  merge_ranks.merge_ranks = true;
  const LeakReport report = build_leak_report(*trace_, merge_ranks);
  ASSERT_EQ(report.groups.size(), 4u);
  // One stack (callsite 4) leaks all three kinds; they stay three groups.
  EXPECT_EQ(report.groups[0].kind_name, "vmm_reservation");
  EXPECT_EQ(report.groups[0].bytes, 2 * kGiB);
  EXPECT_EQ(report.groups[0].count, 2u);
  EXPECT_EQ(report.groups[0].callsite_id, 4);
  // Handle and mapping: the same bytes and count, so the kind orders them.
  EXPECT_EQ(report.groups[1].kind_name, "vmm_handle");
  EXPECT_EQ(report.groups[1].bytes, 128 * kMiB);
  EXPECT_EQ(report.groups[1].callsite_id, 4);
  EXPECT_EQ(report.groups[2].kind_name, "vmm_mapping");
  EXPECT_EQ(report.groups[2].bytes, 128 * kMiB);
  EXPECT_EQ(report.groups[2].count, 2u);
  EXPECT_EQ(report.groups[2].stack.at(0).function, "expand_segment");
  EXPECT_EQ(report.groups[3].kind_name, "device");
  EXPECT_EQ(report.groups[3].bytes, 2 * kMiB);
  EXPECT_EQ(report.groups[3].callsite_id, 3);
  EXPECT_EQ(report.total_bytes, 2 * kGiB + 256 * kMiB + 2 * kMiB);
  EXPECT_EQ(report.total_count, 7u);
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
}

TEST_F(VirtualMemoryTest, TheSummaryKnowsEachProcesssRankAndHost) {
  const Summary summary = build_summary(*trace_);
  ASSERT_EQ(summary.processes.size(), 2u);
  EXPECT_EQ(summary.processes[1].start.host, "node-a");
  EXPECT_EQ(summary.processes[1].start.rank, 1);
  EXPECT_EQ(summary.processes[1].start.local_rank, 1);
  EXPECT_EQ(summary.processes[1].start.world_size, 4);
}

TEST(VirtualMemoryAbsentTest, ATraceWithoutVmmCallsHasNoVirtualMemoryToReport) {
  testing::TempDir dir;
  const auto path = dir / "synthetic.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  const auto trace = storage::TraceReader::open(path, nullptr);
  ASSERT_NE(trace, nullptr);
  EXPECT_TRUE(trace->markers().empty());
  const Summary summary = build_summary(*trace);
  EXPECT_FALSE(summary.virtual_memory.any());
  EXPECT_EQ(summary.virtual_memory.mapped.name, "vmm_mapping");
  EXPECT_EQ(summary.virtual_memory.mapped.bytes_allocated, 0u);
}

}  // namespace
}  // namespace vramtrace::analysis
