// `vramtrace diff A B` on two hand-built traces whose callsites have different ids but the same
// frames, so that only matching by frames can pair them (one MiB = M):
//
// A (pid 100): callsite 2 = forward (model.py:42) <- main (train.py:10), callsite 1 = main
//   seq 1 device 4M cs 2, freed at 2; seq 3 device 4M cs 2, freed at 4   peak 4M, leaked 0
//   seq 5 device 1M cs 1, leaked                                           peak 1M, leaked 1M
// B (pid 200): the same frames as callsites 8 (forward) and 7 (main), and 9 = backward
//   (model.py:50) <- main
//   seq 1 and 2 device 4M cs 8, freed at 3 and 4                          peak 8M, leaked 0
//   seq 5 device 1M cs 7, leaked                                           unchanged
//   seq 6 device 2M cs 9 on device 1, leaked                               peak 2M, leaked 2M
// Both changes score +4M; forward's larger peak change puts it first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;
namespace kind = storage::allocation_kind;
namespace api = storage::api;

constexpr std::uint64_t M = 1024 * 1024;
constexpr std::uint64_t S = 0x7f0000000000;

void write_trace(const std::filesystem::path& path, bool after) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_TRUE(writer) << error;
  storage::TraceWriter& w = *writer;
  w.add_module(1, "/work/train.py", "");
  // B numbers its frames and callsites differently from A.
  const std::int64_t main_frame = after ? 5 : 1, forward_frame = after ? 4 : 2;
  const std::int64_t main_cs = after ? 7 : 1, forward_cs = after ? 8 : 2;
  w.add_frame({main_frame, 1, 0x10, "main", "train.py", 10, false});
  w.add_frame({forward_frame, 1, 0x20, "forward", "model.py", 42, false});
  w.add_callsite(main_cs, std::nullopt, main_frame, 0);
  w.add_callsite(forward_cs, main_cs, forward_frame, 1);
  const ProcessWriter p = start_process(w, 1, after ? 200 : 100);
  if (!after) {
    p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 4 * M, 1, forward_cs));
    p.free(1, 2, api::kCudaFree);
    p.add(p.row(2, kind::kDevice, api::kCudaMalloc, S, 4 * M, 3, forward_cs));
    p.free(2, 4, api::kCudaFree);
    p.add(p.row(3, kind::kDevice, api::kCudaMalloc, S + 8 * M, M, 5, main_cs));
  } else {
    w.add_frame({6, 1, 0x30, "backward", "model.py", 50, false});
    w.add_callsite(9, main_cs, 6, 1);
    p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 4 * M, 1, forward_cs));
    p.add(p.row(2, kind::kDevice, api::kCudaMalloc, S + 4 * M, 4 * M, 2, forward_cs));
    p.free(1, 3, api::kCudaFree);
    p.free(2, 4, api::kCudaFree);
    p.add(p.row(3, kind::kDevice, api::kCudaMalloc, S + 8 * M, M, 5, main_cs));
    storage::AllocationRow backward = p.row(4, kind::kDevice, api::kCudaMalloc, S, 2 * M, 6, 9);
    backward.device = 1;
    p.add(backward);
  }
  ASSERT_TRUE(w.finish(&error)) << error;
}

class CliDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_trace(a_, false);
    write_trace(b_, true);
  }
  CommandResult diff(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"diff", a_.string(), b_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path a_ = dir_ / "a.db", b_ = dir_ / "b.db";
};

TEST_F(CliDiffTest, TextListsRegressionsFirstMatchedByFrames) {
  const CommandResult result = diff();
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out,
            "vramtrace diff: " + a_.string() + " -> " + b_.string() +
                " (block level)\n"
                "peak (callsites' peaks added up): +6.0 MiB (5.0 MiB -> 11.0 MiB)\n"
                "leaked: +2.0 MiB (1.0 MiB -> 3.0 MiB)\n"
                "2 callsites changed, 1 unchanged\n"
                "\n"
                "regression: peak +4.0 MiB (4.0 MiB -> 8.0 MiB), leaked 0 B (0 B -> 0 B), "
                "device allocations from:\n"
                "    #0 forward at model.py:42 (/work/train.py)\n"
                "    #1 main at train.py:10 (/work/train.py)\n"
                "\n"
                "regression: peak +2.0 MiB (0 B -> 2.0 MiB), leaked +2.0 MiB (0 B -> 2.0 MiB), "
                "device allocations from:\n"
                "    #0 backward at model.py:50 (/work/train.py)\n"
                "    #1 main at train.py:10 (/work/train.py)\n");
}

TEST_F(CliDiffTest, JsonCarriesBothSidesAndTheChange) {
  const CommandResult result = diff({"--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["a"], a_.string());
  EXPECT_EQ(doc["b"], b_.string());
  EXPECT_EQ(doc["level"], "block");
  EXPECT_EQ(doc["peak"], json({{"a", 5 * M}, {"b", 11 * M}, {"change", 6 * M}}));
  EXPECT_EQ(doc["leaked"], json({{"a", M}, {"b", 3 * M}, {"change", 2 * M}}));
  EXPECT_EQ(doc["unchanged"], 1);
  ASSERT_EQ(doc["changes"].size(), 2u);
  EXPECT_EQ(doc["changes"][0]["kind"], "device");
  EXPECT_EQ(doc["changes"][0]["peak"], json({{"a", 4 * M}, {"b", 8 * M}, {"change", 4 * M}}));
  EXPECT_EQ(doc["changes"][0]["leaked"], json({{"a", 0}, {"b", 0}, {"change", 0}}));
  EXPECT_EQ(doc["changes"][0]["stack"][0]["function"], "forward");
  EXPECT_EQ(doc["changes"][1]["stack"][0]["function"], "backward");
  EXPECT_FALSE(doc.contains("filters"));
}

TEST_F(CliDiffTest, SwappedTracesTurnRegressionsIntoImprovementsListedLast) {
  const CommandResult result =
      run_vramtrace({"diff", b_.string(), a_.string(), "--format", "json"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["changes"].size(), 2u);
  // Both score -4M; the smaller peak change (forward's -4M) sorts after backward's -2M.
  EXPECT_EQ(doc["changes"][0]["stack"][0]["function"], "backward");
  EXPECT_EQ(doc["changes"][0]["leaked"]["change"], -2 * static_cast<std::int64_t>(M));
  EXPECT_EQ(doc["changes"][1]["peak"]["change"], -4 * static_cast<std::int64_t>(M));
}

TEST_F(CliDiffTest, CsvHasOneRowPerChange) {
  const CommandResult result = diff({"--format", "csv"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "kind,peak_a,peak_b,peak_change,leaked_a,leaked_b,leaked_change,function,file,line,"
            "stack\r\n"
            "device,4194304,8388608,4194304,0,0,0,forward,model.py,42,"
            "forward (model.py:42) <- main (train.py:10)\r\n"
            "device,0,2097152,2097152,0,2097152,2097152,backward,model.py,50,"
            "backward (model.py:50) <- main (train.py:10)\r\n");
}

TEST_F(CliDiffTest, DeviceFilterKeepsThatDevicesAllocations) {
  const CommandResult result = diff({"--device", "1", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["peak"], json({{"a", 0}, {"b", 2 * M}, {"change", 2 * M}}));
  ASSERT_EQ(doc["changes"].size(), 1u);
  EXPECT_EQ(doc["changes"][0]["stack"][0]["function"], "backward");
  EXPECT_EQ(doc["filters"], json({{"device", 1}}));
}

// Two processes of one trace (A's and B's, merged into one file) side by side: the same diff as
// of the two traces.
TEST_F(CliDiffTest, TwoProcessesOfOneTraceCompareAsTwoTraces) {
  const auto merged = dir_ / "merged.db";
  const CommandResult merge =
      run_vramtrace({"merge", a_.string(), b_.string(), "-o", merged.string()}, scratch_.path());
  ASSERT_EQ(merge.exit_status, 0) << merge.err;
  const CommandResult traces = diff({"--format", "json"});
  const CommandResult processes =
      run_vramtrace({"diff", merged.string(), "--pid", "100", "--b-pid", "200", "--format", "json"},
                    scratch_.path());
  ASSERT_EQ(processes.exit_status, 0) << processes.err;
  const json by_traces = json::parse(traces.out), by_processes = json::parse(processes.out);
  EXPECT_EQ(by_processes["changes"], by_traces["changes"]);
  EXPECT_EQ(by_processes["peak"], by_traces["peak"]);
  EXPECT_EQ(by_processes["leaked"], by_traces["leaked"]);
  EXPECT_EQ(by_processes["b"], merged.string());
  EXPECT_EQ(by_processes["filters_b"]["pid"], 200);
  const CommandResult text =
      run_vramtrace({"diff", merged.string(), "--pid", "100", "--b-pid", "200"}, scratch_.path());
  EXPECT_EQ(text.out.rfind("vramtrace diff: " + merged.string() + " (--pid 100) -> " +
                               merged.string() + " (--pid 200) (block level)\n",
                           0),
            0u)
      << text.out;
}

TEST_F(CliDiffTest, ErrorsAreOneLineAndExitTwo) {
  const CommandResult missing_b =
      run_vramtrace({"diff", a_.string(), (dir_ / "none.db").string()}, scratch_.path());
  EXPECT_EQ(missing_b.exit_status, 2);
  EXPECT_EQ(line_count(missing_b.err), 1u) << missing_b.err;
  EXPECT_EQ(missing_b.err.rfind("vramtrace diff: ", 0), 0u) << missing_b.err;
  EXPECT_NE(missing_b.err.find("none.db"), std::string::npos) << missing_b.err;
  const CommandResult one_file = run_vramtrace({"diff", a_.string()}, scratch_.path());
  EXPECT_EQ(one_file.exit_status, 2);
  EXPECT_EQ(line_count(one_file.err), 1u) << one_file.err;
  EXPECT_NE(one_file.err.find("--b-rank"), std::string::npos) << one_file.err;
  const CommandResult bad_kind = diff({"--kind", "tensor"});
  EXPECT_EQ(bad_kind.exit_status, 2);
  EXPECT_EQ(line_count(bad_kind.err), 1u) << bad_kind.err;
  EXPECT_NE(bad_kind.err.find("'tensor'"), std::string::npos) << bad_kind.err;
  const CommandResult no_match = diff({"--pid", "100"});  // only A has pid 100
  EXPECT_EQ(no_match.exit_status, 2);
  EXPECT_EQ(no_match.err, "vramtrace diff: no process matches --pid 100 in " + b_.string() + "\n");
  const CommandResult help = run_vramtrace({"diff", "--help"}, scratch_.path());
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("--level"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::testing
