// `vramtrace roles` as a user runs it, on the allocator trace (tests/unit/allocator_trace.h),
// whose blocks no role rule names (no PyTorch frames, no autograd thread): the JSON contract
// with its six roles, what is not known reported as unknown rather than left out, the process
// without allocator events left out, and the errors. The rules themselves are held by
// tests/unit/block_roles_test.cpp and, on real PyTorch, tests/torch/test_roles.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "run_vramtrace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliRolesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }

  CommandResult roles(std::vector<std::string> args) {
    args.insert(args.begin(), {"roles", trace_.string()});
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

TEST_F(CliRolesTest, AtThePeakEveryRoleIsListedAndWhatNoRuleNamesIsUnknown) {
  const CommandResult result = roles({"--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_EQ(report.at("at"), "peak");
  EXPECT_EQ(report.at("level"), "block");
  // The blocks' peak: 4.25 MiB after seq 8, not the device memory's (6 MiB after seq 7).
  const json expected_roles = {{"parameter", 0},  {"gradient", 0},  {"optimizer_state", 0},
                               {"activation", 0}, {"temporary", 0}, {"unknown", 4456448}};
  EXPECT_EQ(report.at("roles"), expected_roles);
  EXPECT_EQ(report.at("total_bytes"), 4456448);
  ASSERT_EQ(report.at("processes").size(), 1u);  // pid 5001 has no allocator events
  const json& process = report.at("processes")[0];
  EXPECT_EQ(process.at("pid"), kAllocatorPid);
  EXPECT_EQ(process.at("seq"), 8);
  EXPECT_EQ(process.at("blocks").at("unknown"), 3);
  EXPECT_EQ(process.at("advice"), json::array());
}

TEST_F(CliRolesTest, AtAMarkAndAsText) {
  const CommandResult result = roles({"--at", "iter#2"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(
      result.out.rfind(
          "vramtrace: live blocks by role in " + trace_.string() + " at iter#2 (block level)\n", 0),
      0u)
      << result.out;
  // At the second 'iter' (seq 9): B2, B3 and B4, 4.25 MiB.
  EXPECT_NE(result.out.find("pid 5000 at seq 9: 4.2 MiB (4456448 bytes) in 3 blocks\n"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("  unknown              4.2 MiB  100.0%  3 blocks\n"),
            std::string::npos)
      << result.out;
}

TEST_F(CliRolesTest, AProcessWithoutBlocksHasNoRoles) {
  const CommandResult result = roles({"--pid", "5001", "--at", "end"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, "vramtrace: no process of " + trace_.string() +
                            " has allocator events: roles are the caching allocator's blocks "
                            "(PyTorch's tensors)\n");
}

TEST_F(CliRolesTest, RefusalsAreOneLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--kind", "block"},
        {"--level", "segment"},
        {"--at", "no-such-marker"},
        {"--pid", "5001"} /* no block, so no blocks' peak */}) {
    const CommandResult result = roles(args);
    EXPECT_EQ(result.exit_status, 2) << args[0];
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace roles: ", 0), 0u) << result.err;
    EXPECT_EQ(result.out, "");
  }
  const CommandResult help = run_vramtrace({"roles", "--help"}, scratch_.path());
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("--at"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::testing
