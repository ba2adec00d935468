// include/vramtrace/gtest_listener.h: a GoogleTest binary with the listener, under `vramtrace
// run`, marks each test; `vramtrace gate` then blames exactly the test that leaked, at its line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "process_runner.h"

namespace vramtrace::test {
namespace {

using nlohmann::json;

TEST(GtestListener, GateListsTheLeaksOfEachGoogleTest) {
  const auto trace = std::filesystem::temp_directory_path() /
                     ("vramtrace-gtest-listener-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(trace);
  const ProcessResult recorded =
      run_process({{VRAMTRACE_BIN, "run", "-o", trace.string(), "--", GTEST_WORKLOAD_BIN}});
  ASSERT_EQ(recorded.exit_code(), 0) << recorded.out << recorded.err;
  EXPECT_NE(recorded.out.find("[  PASSED  ] 2 tests."), std::string::npos) << recorded.out;

  const ProcessResult gate = run_process(
      {{VRAMTRACE_BIN, "gate", trace.string(), "--max-leaked-bytes", "0", "--format", "json"}});
  std::filesystem::remove(trace);
  EXPECT_EQ(gate.exit_code(), 1) << gate.err;
  const json report = json::parse(gate.out);
  ASSERT_EQ(report["tests"].size(), 2u) << gate.out;
  EXPECT_EQ(report["tests"][0]["test"], "GpuWorkload.Leaky");
  EXPECT_EQ(report["tests"][0]["bytes"], 1 << 20);
  EXPECT_EQ(report["tests"][0]["count"], 1);
  const json& frame = report["tests"][0]["leaks"][0]["stack"][0];
  EXPECT_EQ(frame["file"].get<std::string>().ends_with("gtest_workload.cpp"), true) << frame;
  EXPECT_EQ(frame["line"], 13);  // programs/gtest_workload.cpp: "PLANT: leaky gtest"
  EXPECT_EQ(report["tests"][1]["test"], "GpuWorkload.Clean");
  EXPECT_EQ(report["tests"][1]["count"], 0);
}

// programs/gtest_limits.cpp: five tests, two over the limits they set. Under `vramtrace run`
// those two fail, each with what broke and the stack of what it left live; the other three
// pass (one leaks, but sets no limit). Outside `vramtrace run` nothing is judged: all pass.
TEST(GtestListener, TestsOverTheirGpuLimitsFailWithTheirStacks) {
  const auto trace = std::filesystem::temp_directory_path() /
                     ("vramtrace-gtest-limits-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(trace);
  const ProcessResult recorded =
      run_process({{VRAMTRACE_BIN, "run", "-o", trace.string(), "--", GTEST_LIMITS_BIN}});
  std::filesystem::remove(trace);
  EXPECT_EQ(recorded.exit_code(), 1) << recorded.out << recorded.err;
  const std::string& out = recorded.out;
  EXPECT_NE(out.find("[  PASSED  ] 3 tests."), std::string::npos) << out;
  EXPECT_NE(out.find("[  FAILED  ] 2 tests, listed below:\n"
                     "[  FAILED  ] Limits.LeakOverItsLimitFails\n"
                     "[  FAILED  ] Limits.PeakOverItsLimitFails\n"),
            std::string::npos)
      << out;
  // The leak: its size, the limit, and the line that made it (programs/gtest_limits.cpp:15).
  EXPECT_NE(out.find("vramtrace: Limits.LeakOverItsLimitFails leaked 1048576 bytes of GPU "
                     "memory (limit 0 bytes)\n"
                     "1.0 MiB (1048576 bytes) in 1 allocation made since the checkpoint still "
                     "live (segment level); at most 1.0 MiB (1048576 bytes) live at once\n"
                     "\n"
                     "1.0 MiB (1048576 bytes) in 1 device allocation from:\n"
                     "    #0 "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gtest_limits.cpp:15 ("), std::string::npos) << out;
  EXPECT_NE(out.find("vramtrace: Limits.PeakOverItsLimitFails held 4194304 bytes of GPU memory "
                     "at once (limit 3145728 bytes)\n"
                     "0 B in 0 allocations made since the checkpoint still live"),
            std::string::npos)
      << out;

  const ProcessResult untraced = run_process({{GTEST_LIMITS_BIN}});
  EXPECT_EQ(untraced.exit_code(), 0) << untraced.out << untraced.err;
  EXPECT_NE(untraced.out.find("[  PASSED  ] 5 tests."), std::string::npos) << untraced.out;
}

}  // namespace
}  // namespace vramtrace::test
