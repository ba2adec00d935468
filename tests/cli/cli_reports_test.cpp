// `vramtrace leaks|summary` on the synthetic trace of synthetic_trace.h: the JSON contract of
// docs/cli.md, field by field, and the text report's shape.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roles_trace.h"
#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliReportsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }

  json run_json(const std::string& command) {
    const CommandResult result =
        run_vramtrace({command, trace_.string(), "--format", "json"}, scratch_.path());
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_TRUE(result.err.empty()) << result.err;
    return json::parse(result.out);
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "synthetic.db";
};

json frame(const std::string& function, const json& file, const json& line,
           const std::string& module) {
  return {{"function", function},
          {"file", file},
          {"line", line},
          {"module", module},
          {"language", "native"}};
}

TEST_F(CliReportsTest, LeaksJsonFollowsTheContract) {
  const json report = run_json("leaks");
  EXPECT_EQ(report.at("trace"), trace_.string());
  EXPECT_EQ(report.at("total_bytes"), 20 * kMiB + 512 * kKiB);
  EXPECT_EQ(report.at("total_count"), 8);
  EXPECT_EQ(report.at("incomplete"), false);
  EXPECT_EQ(report.at("warnings").size(), 2u);

  const json main_frame = frame("main", "leaky.cu", 40, kLeakyExe);
  const json make_buffers = frame("make_buffers", "leaky.cu", 12, kLeakyExe);
  const json make_pinned = frame("make_pinned", "leaky.cu", 20, kLeakyExe);
  json expected_leaks = json::array({
      {{"kind", "host_pinned"},
       {"bytes", 8 * kMiB},
       {"count", 1},
       {"stack", json::array({make_pinned, main_frame})}},
      {{"kind", "device"},
       {"bytes", 6 * kMiB},
       {"count", 2},
       {"stack", json::array({frame("inline_helper", "helpers.h", 7, kLeakyExe), make_buffers,
                              main_frame})}},
      {{"kind", "device"},
       {"bytes", 3 * kMiB},
       {"count", 3},
       {"stack",
        json::array({frame("child_work", "leaky.cu", 50, kLeakyExe), make_buffers, main_frame})}},
      {{"kind", "async"},
       {"bytes", 3 * kMiB},
       {"count", 1},
       {"stack",
        json::array({frame("??", nullptr, nullptr, kTorchModule), make_pinned, main_frame})}},
      {{"kind", "device"}, {"bytes", 512 * kKiB}, {"count", 1}, {"stack", json::array()}},
  });
  // Added to the contract by the allocator level: each entry's level (no blocks here: all
  // "segment"), and the report's level, allocator_events and cached.
  for (auto& leak : expected_leaks) leak["level"] = "segment";
  EXPECT_EQ(report.at("leaks"), expected_leaks) << report.at("leaks").dump(2);
  EXPECT_EQ(report.at("level"), "segment");
  EXPECT_EQ(report.at("allocator_events"), false);
  EXPECT_EQ(report.at("cached"), json({{"bytes", 0}, {"count", 0}}));
  // No Python process: each ends at the end of the trace.
  EXPECT_EQ(report.at("ended_at_python_finalizing"), json::array());
  // No CUDA library allocated for itself, and no expandable segments.
  EXPECT_EQ(report.at("held_by_libraries"), json::array());
  EXPECT_EQ(report.at("expandable_segments"),
            json({{"reserved_bytes", 0}, {"reservations", 0}, {"handles", 0}}));

  // Nothing beyond the contract and its additions.
  for (const auto& [key, value] : report.items()) {
    EXPECT_TRUE(key == "trace" || key == "total_bytes" || key == "total_count" || key == "leaks" ||
                key == "incomplete" || key == "warnings" || key == "level" ||
                key == "allocator_events" || key == "cached" || key == "held_by_libraries" ||
                key == "expandable_segments" || key == "ended_at_python_finalizing")
        << key;
  }
}

TEST_F(CliReportsTest, SummaryJsonCarriesTheTotals) {
  const json summary = run_json("summary");
  EXPECT_EQ(summary.at("trace"), trace_.string());
  EXPECT_EQ(summary.at("incomplete"), false);
  EXPECT_EQ(summary.at("duration_ns"), kLastEndNs - kFirstStartNs);
  EXPECT_EQ(summary.at("command"), json::array({"leaky", "--size", "1 MiB"}));

  const json& processes = summary.at("processes");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].at("pid"), 4242);
  EXPECT_EQ(processes[0].at("exit_status"), 0);
  EXPECT_EQ(processes[0].at("signal"), nullptr);
  EXPECT_EQ(processes[0].at("argv"), json::array({"leaky", "--size", "1 MiB"}));
  EXPECT_EQ(processes[1].at("signal"), 9);
  EXPECT_EQ(processes[1].at("complete"), false);

  const json& device = summary.at("kinds").at(0);
  EXPECT_EQ(device.at("kind"), "device");
  EXPECT_EQ(device.at("allocations"), 9);
  EXPECT_EQ(device.at("bytes_allocated"), 28 * kMiB + 512 * kKiB);
  EXPECT_EQ(device.at("frees"), 3);
  EXPECT_EQ(device.at("failed_allocations"), 1);
  EXPECT_EQ(device.at("failures"),
            json::array({{{"result", 2}, {"error", "cudaErrorMemoryAllocation"}, {"count", 1}}}));
  EXPECT_EQ(device.at("live_count"), 6);
  EXPECT_EQ(device.at("live_bytes"), 9 * kMiB + 512 * kKiB);

  const json& peak = summary.at("peaks").at(0);
  EXPECT_EQ(peak.at("pid"), 4242);
  EXPECT_EQ(peak.at("device"), 0);
  EXPECT_EQ(peak.at("bytes"), 22 * kMiB);
  EXPECT_EQ(summary.at("bad_frees"), json::array({{{"reason", "call_failed"}, {"count", 1}},
                                                  {{"reason", "unknown_address"}, {"count", 1}}}));
  EXPECT_EQ(summary.at("stats").at(0).at("severity"), "data_loss");
}

TEST_F(CliReportsTest, LeaksTextListsEachStackFrameByFrame) {
  const CommandResult result = run_vramtrace({"leaks", trace_.string()}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string& text = result.out;
  EXPECT_NE(text.find("20.5 MiB (21495808 bytes) leaked in 8 allocations from 5 stacks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("8.0 MiB (8388608 bytes) in 1 host_pinned allocation from:\n"
                      "    #0 make_pinned at leaky.cu:20 (/usr/bin/leaky)\n"
                      "    #1 main at leaky.cu:40 (/usr/bin/leaky)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    #0 ?? (/usr/lib/libtorch.so+0x5000)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("in 1 device allocation (no stack recorded)"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: process 4300"), std::string::npos) << text;
  // Largest first.
  EXPECT_LT(text.find("host_pinned"), text.find("2 device allocations")) << text;
}

TEST_F(CliReportsTest, SummaryTextShowsKindsPeaksAndFailures) {
  const CommandResult result = run_vramtrace({"summary", trace_.string()}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string& text = result.out;
  EXPECT_NE(text.find("duration: 4.000 s"), std::string::npos) << text;
  EXPECT_NE(text.find("pid 4242 on node1: leaky --size 1 MiB: exited with status 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pid 4300 on node1: leaky --child: killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("returned cudaErrorMemoryAllocation (2)"), std::string::npos) << text;
  EXPECT_NE(text.find("data_loss ring_overflow = 3: events dropped while the ring was full"),
            std::string::npos)
      << text;
  // One clock: "+D" counts from the trace's first allocation (100 ms after the first process
  // began), as `peak` prints it and `--at +D` reads it.
  EXPECT_NE(text.find("pid 4242 on node1, device 0: 22.0 MiB (23068672 bytes) at +700.000 ms"),
            std::string::npos)
      << text;
  const CommandResult peak =
      run_vramtrace({"peak", trace_.string(), "--pid", "4242", "--device", "0"}, scratch_.path());
  EXPECT_NE(peak.out.find("(+700.000 ms)"), std::string::npos) << peak.out << peak.err;
  const CommandResult at = run_vramtrace(
      {"leaks", trace_.string(), "--pid", "4242", "--at", "+700ms", "--format", "json"},
      scratch_.path());
  ASSERT_EQ(at.exit_status, 0) << at.err;
  const CommandResult at_peak =
      run_vramtrace({"leaks", trace_.string(), "--pid", "4242", "--at", "peak", "--format", "json"},
                    scratch_.path());
  ASSERT_EQ(at_peak.exit_status, 0) << at_peak.err;
  EXPECT_EQ(json::parse(at.out)["at"][0]["seq"], json::parse(at_peak.out)["at"][0]["seq"])
      << at.out << at_peak.out;
  // The trace holds async allocations: the peak says what it cannot see of their pool.
  EXPECT_NE(text.find("  async counts the allocations' own bytes; the driver's pool behind them "
                      "holds more"),
            std::string::npos)
      << text;
  const CommandResult device_only =
      run_vramtrace({"summary", trace_.string(), "--kind", "device"}, scratch_.path());
  ASSERT_EQ(device_only.exit_status, 0) << device_only.err;
  EXPECT_EQ(device_only.out.find("driver's pool"), std::string::npos)
      << "no async allocations in the report, no word of their pool\n"
      << device_only.out;
}

TEST_F(CliReportsTest, AnIncompleteTraceIsReportedWithAWarningAndExits0) {
  const auto path = dir_ / "incomplete.db";
  ASSERT_EQ(write_synthetic_trace(path, /*finish=*/false), "");
  const CommandResult result =
      run_vramtrace({"leaks", path.string(), "--format", "json"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report.at("incomplete"), true);
  EXPECT_NE(report.at("warnings").at(0).get<std::string>().find("incomplete"), std::string::npos);
  EXPECT_EQ(report.at("total_count"), 8);
}

// Whether `text` holds `part`, saying what it held when not.
::testing::AssertionResult has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no '" << part << "' in:\n" << text;
}

// The roles trace (tests/unit/roles_trace.h): pid 4000's blocks peak on device 0 at seq 4 with
// 8 MiB of activations, 4 MiB of temporaries and 1 MiB of parameters; its device 1 peaks
// later, at a moment that is not the process's peak. The roles count the process's blocks on
// both devices, and the line says so.
TEST_F(CliReportsTest, SummaryNamesTheRolesAtTheProcesssBlocksPeak) {
  const auto roles = dir_ / "roles.db";
  ASSERT_EQ(write_roles_trace(roles), "");
  const CommandResult text = run_vramtrace({"summary", roles.string()}, scratch_.path());
  EXPECT_EQ(text.exit_status, 0) << text.err;
  EXPECT_TRUE(has(text.out,
                  "    peak live blocks, device 0: 13.0 MiB (13631488 bytes) at +3.000 ms\n"
                  "    by role, all devices at that moment: activation 8.0 MiB, temporary "
                  "4.0 MiB, parameter 1.0 MiB\n"
                  "    peak live blocks, device 1: 256.0 KiB (262144 bytes) at +10.000 ms\n"
                  "  pid 4100: no allocator events"));

  const CommandResult result =
      run_vramtrace({"summary", roles.string(), "--format", "json"}, scratch_.path());
  EXPECT_EQ(result.exit_status, 0) << result.err;
  const json summary = json::parse(result.out);
  const json& peaks = summary["block_peaks"];
  ASSERT_EQ(peaks.size(), 2u) << peaks.dump();
  EXPECT_EQ(peaks[0]["device"], 0);
  EXPECT_EQ(peaks[0]["roles"], json({{"parameter", 1 << 20},
                                     {"gradient", 0},
                                     {"optimizer_state", 0},
                                     {"activation", 8 << 20},
                                     {"temporary", 4 << 20},
                                     {"unknown", 0}}));
  EXPECT_EQ(peaks[1]["device"], 1);
  EXPECT_TRUE(peaks[1]["roles"].is_null()) << peaks[1].dump();
}

}  // namespace
}  // namespace vramtrace::testing
