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

}  // namespace
}  // namespace vramtrace::test
