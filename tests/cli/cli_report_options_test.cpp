// The options every report command shares (cli/report_scope.h): --device, --kind, --level and
// --format csv, on `leaks`, `summary` and `oom`, and the advice `summary` shows. On the synthetic
// trace of synthetic_trace.h, and on a hand-built PyTorch-like trace (one MiB = M, S =
// 0x7f0000000000): pid 5000 makes a 20M segment at S (seq 1) and three 4M blocks in it at S,
// S+8M and S+16M (seq 2-4, callsite 2 = forward (model.py:42) <- main (train.py:10)), all
// live: 8M cached in two 4M gaps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "storage/trace_writer.h"
#include "synthetic_trace.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;
namespace kind = storage::allocation_kind;
namespace api = storage::api;

constexpr std::uint64_t M = kMiB;
constexpr std::uint64_t S = 0x7f0000000000;

void write_fragmented_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_TRUE(writer) << error;
  storage::TraceWriter& w = *writer;
  add_train_stacks(w);
  const ProcessWriter p = start_process(w, 1, 5000);
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  p.block(2, S, 4 * M, 2, 1);
  p.block(3, S + 8 * M, 4 * M, 3, 1);
  p.block(4, S + 16 * M, 4 * M, 4, 1);
  w.end_process({1, 2'000'000'000, 0, {}, true});
  ASSERT_TRUE(w.finish(&error)) << error;
}

class CliReportOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(write_synthetic_trace(synthetic_), "");
    write_fragmented_trace(torch_);
  }
  CommandResult run(std::vector<std::string> args) { return run_vramtrace(args, scratch_.path()); }
  json run_json(std::vector<std::string> args) {
    args.insert(args.end(), {"--format", "json"});
    const CommandResult result = run(args);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return result.exit_status == 0 ? json::parse(result.out) : json();
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path synthetic_ = dir_ / "synthetic.db";
  std::filesystem::path torch_ = dir_ / "torch.db";
};

TEST_F(CliReportOptionsTest, LeaksOfOneDeviceAsCsv) {
  // Device 1 has one leak: a6, async 3 MiB at callsite 5 (an unsymbolized frame first).
  const CommandResult result =
      run({"leaks", synthetic_.string(), "--device", "1", "--format", "csv"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "kind,level,bytes,count,function,file,line,stack\r\n"
            "async,segment,3145728,1,,,,?? <- make_pinned (leaky.cu:20) <- main (leaky.cu:40)\r\n");
}

TEST_F(CliReportOptionsTest, LeaksOfOneKind) {
  const json leaks = run_json({"leaks", synthetic_.string(), "--kind", "host_pinned"});
  EXPECT_EQ(leaks["total_bytes"], 8 * M);
  ASSERT_EQ(leaks["leaks"].size(), 1u);
  EXPECT_EQ(leaks["leaks"][0]["kind"], "host_pinned");
  EXPECT_EQ(leaks["filters"], json({{"kind", "host_pinned"}}));
  const CommandResult text = run({"leaks", synthetic_.string(), "--kind", "host_pinned"});
  EXPECT_NE(text.out.find(", only kind host_pinned (segment level)"), std::string::npos)
      << text.out;
}

TEST_F(CliReportOptionsTest, SummaryCsvIsTheKindsTable) {
  // Device allocations of both processes: 9 made (a5 failed), 28.5 MiB; freed a1, a7, b1.
  const CommandResult result =
      run({"summary", synthetic_.string(), "--kind", "device", "--format", "csv"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "kind,allocations,bytes_allocated,frees,bytes_freed,live_count,live_bytes,"
            "failed_allocations\r\n"
            "device,9,29884416,3,19922944,6,9961472,1\r\n");
}

TEST_F(CliReportOptionsTest, SummaryOfOneDeviceHasItsKindsAndPeaksOnly) {
  const json summary = run_json({"summary", synthetic_.string(), "--device", "1"});
  ASSERT_EQ(summary["kinds"].size(), 1u);
  EXPECT_EQ(summary["kinds"][0]["kind"], "async");
  ASSERT_EQ(summary["peaks"].size(), 1u);
  EXPECT_EQ(summary["peaks"][0]["device"], 1);
  EXPECT_EQ(summary["peaks"][0]["bytes"], 3 * M);
}

TEST_F(CliReportOptionsTest, OomAsCsvAndFilteredAway) {
  const CommandResult csv = run({"oom", synthetic_.string(), "--format", "csv"});
  ASSERT_EQ(csv.exit_status, 0) << csv.err;
  EXPECT_EQ(csv.out,
            "upid,pid,seq,time_ns,device,api,kind,requested_bytes,result,live_bytes,live_count,"
            "function,file,line,advice\r\n"
            "1,4242,6,1600000000,0,cudaMalloc,device,68719476736,2,14680064,3,inline_helper,"
            "helpers.h,7,top_callsites\r\n");
  // Of the 14 MiB live at the OOM, the device kind's: a2 and a3, 6 MiB (a4 is host_pinned).
  const json device = run_json({"oom", synthetic_.string(), "--kind", "device"});
  EXPECT_EQ(device["ooms"][0]["live"]["total_bytes"], 6 * M);
  const json device1 = run_json({"oom", synthetic_.string(), "--device", "1"});
  EXPECT_EQ(device1["ooms"], json::array());
}

TEST_F(CliReportOptionsTest, SummaryShowsTheAdviceTheTraceSupports) {
  const CommandResult text = run({"summary", torch_.string()});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  const std::string expected =
      "\nadvice:\n"
      "  [expandable_segments] pid 5000, device 0: at the peak of live tensors, the allocator's "
      "segments held 20.0 MiB in 1 segment, of which 8.0 MiB (40%) was cached between live "
      "tensors in gaps of at most 4.0 MiB (external fragmentation 0.50): reserved, but of no use "
      "to a larger tensor. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so that the "
      "allocator grows a segment in place instead of caching many; or max_split_size_mb:<MB>, so "
      "that large cached blocks are not split for small requests.\n";
  ASSERT_GE(text.out.size(), expected.size());
  EXPECT_EQ(text.out.substr(text.out.size() - expected.size()), expected);

  const json summary = run_json({"summary", torch_.string()});
  ASSERT_EQ(summary["advice"].size(), 1u);
  EXPECT_EQ(summary["advice"][0]["id"], "expandable_segments");
  EXPECT_EQ(summary["advice"][0]["evidence"], json({{"pid", 5000},
                                                    {"device", 0},
                                                    {"segment_bytes", 20 * M},
                                                    {"cached_bytes", 8 * M},
                                                    {"largest_free_gap", 4 * M},
                                                    {"segments", 1},
                                                    {"external_fragmentation", 0.5}}));
  // The synthetic trace has no allocator events and no pinned gigabyte: no advice.
  EXPECT_EQ(run_json({"summary", synthetic_.string()})["advice"], json::array());
  EXPECT_EQ(run({"summary", synthetic_.string()}).out.find("advice:"), std::string::npos);
}

TEST_F(CliReportOptionsTest, TheSegmentLevelLeavesBlocksOut) {
  const json block = run_json({"summary", torch_.string()});
  ASSERT_EQ(block["kinds"].size(), 2u);  // device and block
  const json segment = run_json({"summary", torch_.string(), "--level", "segment"});
  ASSERT_EQ(segment["kinds"].size(), 1u);
  EXPECT_EQ(segment["kinds"][0]["kind"], "device");
  EXPECT_EQ(segment["advice"], json::array());
  EXPECT_EQ(segment["block_peaks"], json::array());
  EXPECT_NE(run({"summary", torch_.string(), "--level", "segment"})
                .out.find("allocator level (blocks: tensors of a caching allocator; segments: its "
                          "memory):\n  not looked at (--level segment)\n"),
            std::string::npos);
  // leaks: the three blocks at the block level, the segment itself at the segment level.
  EXPECT_EQ(run_json({"leaks", torch_.string()})["total_bytes"], 12 * M);
  EXPECT_EQ(run_json({"leaks", torch_.string(), "--level", "segment"})["total_bytes"], 20 * M);
}

TEST_F(CliReportOptionsTest, BadOptionValuesAreOneLineErrors) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"summary", synthetic_.string(), "--level", "tensor"},
        std::vector<std::string>{"leaks", synthetic_.string(), "--format", "xml"},
        std::vector<std::string>{"oom", synthetic_.string(), "--device", "-1"},
        std::vector<std::string>{"leaks", synthetic_.string(), "--kind", "tensor"}}) {
    const CommandResult result = run(args);
    EXPECT_EQ(result.exit_status, 2) << args[0] << " " << args[2];
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

}  // namespace
}  // namespace vramtrace::testing
