// The fixture of the role tests: a hand-built trace of one PyTorch-like process, and its roles
// at a moment as `vramtrace roles --at` gives them.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "analysis/roles/block_roles.h"
#include "analysis/time/report_time_index.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace::analysis {

class RoleTraceTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kBlockSpacing = 8 << 20;

  // A trace at `name` with process 1 (pid 4000), its main thread 1 and the autograd engine's
  // thread 2, and a cudaMalloc segment of `segment` bytes (allocation 1, seq 1) for the blocks.
  std::unique_ptr<storage::TraceWriter> start(const std::string& name, std::uint64_t segment) {
    path_ = dir_.path() / name;
    std::string error;
    auto w = storage::TraceWriter::create(path_, &error);
    EXPECT_NE(w, nullptr) << error;
    if (w == nullptr) return w;
    const testing::ProcessWriter p = testing::start_process(*w, 1, 4000);
    w->add_thread(2, 1, 4002);
    w->set_thread_name(2, "pt_autograd_0");
    p.add(p.row(1, storage::allocation_kind::kDevice, storage::api::kCudaMalloc, kSegment, segment,
                1, std::nullopt));
    return w;
  }

  // Block `id` of the caching allocator in process 1, made by thread `utid`; with `direct`, a
  // cudaMalloc of its own instead, as torch makes a tensor without caching.
  static void add_block(storage::TraceWriter& w, std::int64_t id, std::uint64_t size,
                        std::uint64_t seq, std::int64_t callsite, std::int64_t utid = 1,
                        bool direct = false) {
    const testing::ProcessWriter p{w, 1};
    storage::AllocationRow r =
        p.row(id, direct ? storage::allocation_kind::kDevice : storage::allocation_kind::kBlock,
              direct ? storage::api::kCudaMalloc : storage::api::kC10ReportMemoryUsage,
              kSegment + static_cast<std::uint64_t>(id) * kBlockSpacing, size, seq, callsite);
    if (!direct) r.segment_id = 1;
    r.alloc_utid = utid;
    p.add(r);
  }

  static void add_free(storage::TraceWriter& w, std::int64_t id, std::uint64_t seq,
                       std::int64_t utid = 1, bool direct = false) {
    storage::FreeRow f;
    f.free_seq = seq;
    f.free_ns = testing::ns_of_seq(seq);
    f.free_utid = utid;
    f.free_api = direct ? storage::api::kCudaFree : storage::api::kC10ReportMemoryUsage;
    w.set_free(id, f);
  }

  // Finishes the trace SetUp wrote, and opens it with its time index.
  void open(storage::TraceWriter& writer) {
    std::string error;
    ASSERT_TRUE(writer.finish(&error)) << error;
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(path_, &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
    index_ = open_time_index(*trace_);
  }

  RoleTotals at(const std::string& moment) {
    const std::vector<ProcessRoles> report =
        build_role_report(*trace_, *index_, parse_moment(moment), std::nullopt);
    EXPECT_EQ(report.size(), 1u);
    return report.empty() ? RoleTotals{} : report.front().live;
  }

  static std::uint64_t bytes(const RoleTotals& totals, BlockRole role) {
    return totals.bytes[static_cast<std::size_t>(role)];
  }

  static constexpr std::uint64_t kSegment = 0x10000000;
  testing::TempDir dir_;
  std::filesystem::path path_;
  std::unique_ptr<storage::TraceReader> trace_;
  std::unique_ptr<storage::TimeIndex> index_;
};

}  // namespace vramtrace::analysis
