// `vramtrace gate` and `vramtrace run --gate` as a CI job runs them: every exit status, the
// files they write, and the command's own failure winning over the gate's verdict.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "roles_trace.h"
#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliGateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }
  CommandResult gate(std::vector<std::string> args) {
    args.insert(args.begin(), {"gate", trace_.string()});
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "synthetic.db";
};

// The synthetic trace's second process was not recorded to its end, and its ring overflowed:
// limits that hold on what was recorded exit 3, naming each gap, unless the gaps are accepted.
TEST_F(CliGateTest, PassingLimitsExit0OnlyWhereTheRecordingHasNoGapsOrTheyAreAccepted) {
  const std::vector<std::string> limits = {
      "--max-leaked-bytes", "20.5MiB", "--max-leaked-count", "8", "--max-peak", "22MiB"};
  const CommandResult gaps = gate(limits);
  EXPECT_EQ(gaps.exit_status, 3) << gaps.out << gaps.err;
  EXPECT_NE(gaps.out.find("vramtrace gate: NOT VOUCHED for "), std::string::npos) << gaps.out;
  EXPECT_NE(gaps.out.find("  gap: process 4300 on node1 (/usr/bin/leaky) was not recorded to its "
                          "end"),
            std::string::npos)
      << gaps.out;
  EXPECT_NE(gaps.out.find("  gap: data_loss: ring_overflow = 3"), std::string::npos) << gaps.out;

  std::vector<std::string> accepted = limits;
  accepted.emplace_back("--accept-data-loss");
  const CommandResult result = gate(accepted);
  EXPECT_EQ(result.exit_status, 0) << result.out << result.err;
  // The report warns first.
  EXPECT_EQ(result.out.rfind("warning: process 4300", 0), 0u) << result.out;
  EXPECT_EQ(result.out.find("NOT VOUCHED"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\nvramtrace gate: passed 5 checks on "), std::string::npos)
      << result.out;
}

TEST_F(CliGateTest, ABrokenLimitExits1AndShowsTheLeaksWithTheirStacks) {
  const CommandResult result = gate({"--max-leaked-bytes", "0"});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.out.find("FAILED 1 of 1 check"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("FAIL leaked_bytes (all processes): 20.5 MiB (21495808 bytes), "
                            "limit 0 B"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("#0 make_pinned at leaky.cu:20 (/usr/bin/leaky)"), std::string::npos)
      << result.out;
}

TEST_F(CliGateTest, SuppressionsFileHidesLeaksAndTheReportSaysHowMany) {
  const auto rules = dir_ / "gpu.supp";
  std::ofstream(rules) << "# staging buffers live for the process\nfunction:make_pinned\n";
  const CommandResult result = gate(
      {"--max-leaked-bytes", "9.5MiB", "--suppressions", rules.string(), "--accept-data-loss"});
  EXPECT_EQ(result.exit_status, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("function:make_pinned (line 2: staging buffers live for the process): "
                            "hid 2 leaks, 11.0 MiB in 2 allocations"),
            std::string::npos)
      << result.out;
}

TEST_F(CliGateTest, UsageAndTraceErrorsExit2WithOneLine) {
  const auto bad_rules = dir_ / "bad.supp";
  std::ofstream(bad_rules) << "leak:foo\n";
  const std::vector<std::vector<std::string>> cases = {
      {"gate", trace_.string(), "--max-leaked-bytes", "lots"},
      {"gate", trace_.string(), "--max-leak-increase", "1MiB"},  // no --baseline
      {"gate", trace_.string(), "--baseline", (dir_ / "missing.db").string(), "--max-leak-increase",
       "0"},
      {"gate", (dir_ / "missing.db").string(), "--max-leaked-bytes", "0"},
      {"gate", trace_.string(), "--suppressions", bad_rules.string()},
      {"gate", trace_.string(), "--level", "tensor"},
      {"gate", trace_.string(), "--rank", "7", "--max-leaked-bytes", "0"},
  };
  for (const auto& args : cases) {
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 2) << args[2] << ": " << result.out << result.err;
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace gate", 0), 0u) << result.err;
  }
}

// A suppressions file that never ends is refused (before, /dev/zero took all memory and the
// message blamed the trace), and a bad line is shown by its start, escaped.
TEST_F(CliGateTest, ASuppressionsFileIsBoundedAndABadLineShownByItsStart) {
  const CommandResult endless = run_vramtrace_limited(
      {"gate", trace_.string(), "--max-leaked-bytes", "0", "--suppressions", "/dev/zero"},
      scratch_.path(), {.alarm_seconds = 60});
  EXPECT_EQ(endless.exit_status, 2) << endless.err;
  EXPECT_NE(endless.err.find("the suppressions file /dev/zero is larger than 1 MiB"),
            std::string::npos)
      << endless.err;
  const auto long_line = dir_ / "long.supp";
  std::ofstream(long_line) << "leak:\x1b[2J" << std::string(10000, 'x') << "\n";
  const CommandResult bad = gate({"--suppressions", long_line.string()});
  EXPECT_EQ(bad.exit_status, 2);
  EXPECT_EQ(line_count(bad.err), 1u);
  EXPECT_LT(bad.err.size(), 400u) << bad.err;
  EXPECT_NE(bad.err.find("got 'leak:\\x1b[2Jxxx"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("...'"), std::string::npos) << bad.err;
}

// A limit that would pass everything (NaN) or fail everything (a negative increase), and a role
// given two limits, are mistakes to say, not values to judge with.
TEST_F(CliGateTest, LimitsThatAreNotLimitsAreRefused) {
  const auto baseline = dir_ / "baseline.db";
  ASSERT_EQ(write_synthetic_trace(baseline), "");
  for (const char* percent : {"nan", "inf", "-5", "5x"}) {
    SCOPED_TRACE(percent);
    const CommandResult result =
        gate({"--baseline", baseline.string(), "--max-peak-increase", percent});
    EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find("is not a percentage of 0 or more"), std::string::npos) << result.err;
  }
  const CommandResult twice =
      gate({"--max-role", "activation=1MiB", "--max-role", "activation=2MiB"});
  EXPECT_EQ(twice.exit_status, 2) << twice.out << twice.err;
  EXPECT_NE(twice.err.find("the role 'activation' is given a limit twice"), std::string::npos)
      << twice.err;
}

// Byte counts are integers in the JSON, exact where a double is not (past 2^53).
TEST_F(CliGateTest, JsonByteCountsAreExactIntegers) {
  const CommandResult result =
      gate({"--max-leaked-bytes", "18446744073709551615", "--max-leaked-count", "9007199254740993",
            "--format", "json", "--accept-data-loss"});
  ASSERT_EQ(result.exit_status, 0) << result.out << result.err;
  const json report = json::parse(result.out);
  ASSERT_EQ(report["checks"].size(), 2u);
  EXPECT_TRUE(report["checks"][0]["limit"].is_number_unsigned());
  EXPECT_EQ(report["checks"][0]["limit"].get<std::uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(report["checks"][0]["actual"].get<std::uint64_t>(), 21495808u);
  EXPECT_EQ(report["checks"][1]["limit"].get<std::uint64_t>(), 9007199254740993ull);
  EXPECT_EQ(report["passed"], true);
  EXPECT_EQ(report["vouched"], true);
  EXPECT_EQ(report["gaps_accepted"], true);
  EXPECT_FALSE(report["gaps"].empty());
}

TEST_F(CliGateTest, BaselineLimitsCompareWithTheOlderTrace) {
  const auto baseline = dir_ / "baseline.db";
  ASSERT_EQ(write_synthetic_trace(baseline), "");
  EXPECT_EQ(gate({"--baseline", baseline.string(), "--max-leak-increase", "0",
                  "--max-peak-increase", "0", "--accept-data-loss"})
                .exit_status,
            0);
}

TEST_F(CliGateTest, JsonAndMarkdownFilesCarryTheVerdict) {
  const auto json_path = dir_ / "gate.json";
  const auto markdown_path = dir_ / "gate.md";
  const CommandResult result = gate({"--max-leaked-count", "3", "--json", json_path.string(),
                                     "--markdown", markdown_path.string()});
  EXPECT_EQ(result.exit_status, 1);
  const json report = json::parse(slurp(json_path));
  EXPECT_EQ(report["passed"], false);
  ASSERT_EQ(report["checks"].size(), 1u);
  EXPECT_EQ(report["checks"][0]["name"], "leaked_count");
  EXPECT_EQ(report["checks"][0]["actual"], 8);
  EXPECT_EQ(report["checks"][0]["limit"], 3);
  EXPECT_EQ(report["checks"][0]["leaks"].size(), 5u);
  EXPECT_EQ(report["checks"][0]["leaks"][0]["stack"][0]["function"], "make_pinned");
  const std::string markdown = slurp(markdown_path);
  EXPECT_NE(markdown.find("## vramtrace gate: **failed**"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| leaked_count | all processes | 8 allocations | 3 | **FAIL** |"),
            std::string::npos)
      << markdown;
}

TEST_F(CliGateTest, RunGateExitsWithTheCommandsFailureFirstThenTheVerdict) {
  const auto trace = dir_ / "run.db";
  const auto run = [&](const std::string& spec, const std::string& script) {
    return run_vramtrace(
        {"run", "--force", "-o", trace.string(), "--gate", spec, "--", "/bin/sh", "-c", script},
        scratch_.path());
  };
  // /bin/sh allocates no GPU memory: nothing leaks, every limit holds.
  const CommandResult passed = run("leaked_bytes=0,peak<=1GiB", "echo done");
  EXPECT_EQ(passed.exit_status, 0) << passed.err;
  EXPECT_EQ(passed.out, "done\n");  // the command's stdout is its own; the verdict is on stderr
  EXPECT_NE(passed.err.find("vramtrace gate: passed 1 check on"), std::string::npos) << passed.err;
  EXPECT_EQ(run("leaked_bytes=0", "exit 3").exit_status, 3);
  const CommandResult bad_spec = run("leaks=0", "true");
  EXPECT_EQ(bad_spec.exit_status, 2);
  EXPECT_NE(bad_spec.err.find("unknown limit 'leaks'"), std::string::npos) << bad_spec.err;
}

// The allocator trace (tests/unit/allocator_trace.h): three 'iter' marks in pid 5000, over
// which init_workspace's live bytes rise by 1 MiB per iteration.
TEST_F(CliGateTest, MaxGrowthJudgesTheBytesEachIterationAddsPerProcess) {
  const auto trace = dir_ / "allocator.db";
  ASSERT_EQ(write_allocator_trace(trace), "");
  const auto growth = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"gate", trace.string(), "--iteration-marker", "iter"});
    return run_vramtrace(args, scratch_.path());
  };
  const CommandResult at = growth({"--max-growth", "1MiB"});
  EXPECT_EQ(at.exit_status, 0) << at.out << at.err;
  EXPECT_NE(at.out.find("PASS growth (pid 5000, 3 iterations of 'iter'): 1.0 MiB per iteration, "
                        "limit 1.0 MiB per iteration"),
            std::string::npos)
      << at.out;

  const CommandResult over = growth({"--max-growth", "512KiB", "--format", "json"});
  EXPECT_EQ(over.exit_status, 1) << over.err;
  const nlohmann::json report = nlohmann::json::parse(over.out);
  ASSERT_EQ(report["checks"].size(), 1u);
  const nlohmann::json& check = report["checks"][0];
  EXPECT_EQ(check["name"], "growth");
  EXPECT_EQ(check["unit"], "bytes per iteration");
  EXPECT_EQ(check["passed"], false);
  ASSERT_EQ(check["leaks"].size(), 1u);
  EXPECT_EQ(check["leaks"][0]["bytes_per_iteration"], 1024.0 * 1024);
  EXPECT_EQ(check["leaks"][0]["stack"][0]["function"], "init_workspace");

  const CommandResult text = growth({"--max-growth", "512KiB"});
  EXPECT_EQ(text.exit_status, 1);
  EXPECT_NE(text.out.find("+1.0 MiB per iteration (2.0 MiB (2097152 bytes) in 2 device "
                          "allocations live at the last iteration) from:\n"
                          "           #0 init_workspace at lib.cu:3"),
            std::string::npos)
      << text.out;

  // Neither the marker 'iteration' nor a training loop's backward passes: no iterations to
  // compare is a trace error, not a pass.
  const CommandResult no_marker =
      run_vramtrace({"gate", trace.string(), "--max-growth", "0"}, scratch_.path());
  EXPECT_EQ(no_marker.exit_status, 2);
  EXPECT_NE(no_marker.err.find("none has the marker 'iteration' twice, nor two backward passes"),
            std::string::npos)
      << no_marker.err;
}

// Whether `text` holds `part`, saying what it held when not.
::testing::AssertionResult has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no '" << part << "' in:\n" << text;
}

// The roles trace (tests/unit/roles_trace.h): pid 4000's blocks peak at seq 4 with 8 MiB of
// activations, 4 MiB of temporaries and 1 MiB of parameters; pid 4100 has no allocator events.
class CliGateRolesTest : public CliGateTest {
 protected:
  void SetUp() override {
    CliGateTest::SetUp();
    ASSERT_EQ(write_roles_trace(roles_), "");
  }
  CommandResult roles_gate(std::vector<std::string> args) {
    args.insert(args.begin(), {"gate", roles_.string()});
    return run_vramtrace(args, scratch_.path());
  }

  std::filesystem::path roles_ = dir_ / "roles.db";
};

TEST_F(CliGateRolesTest, MaxRolePassesAtTheRolesBytesAtThePeak) {
  const CommandResult result = roles_gate(
      {"--max-role", "activation=8MiB", "--max-role", "parameter=1MiB", "--accept-data-loss"});
  EXPECT_EQ(result.exit_status, 0) << result.out << result.err;
  EXPECT_TRUE(has(result.out,
                  "PASS role.activation (pid 4000 at its blocks' peak, seq 4): 8.0 MiB "
                  "(8388608 bytes), limit 8.0 MiB\n"));
  EXPECT_TRUE(has(result.out, "PASS role.parameter (pid 4000 at its blocks' peak, seq 4)"));
  EXPECT_TRUE(has(result.out,
                  "warning: pid 4100 recorded GPU memory but no allocator events: the "
                  "role limits do not judge it"));
}

TEST_F(CliGateRolesTest, MaxRoleFailsOverTheLimitInEveryReport) {
  const auto json_path = dir_ / "gate.json";
  const auto junit_path = dir_ / "gate.xml";
  const auto markdown_path = dir_ / "gate.md";
  const CommandResult result =
      roles_gate({"--max-role", "activation=4MiB", "--json", json_path.string(), "--junit",
                  junit_path.string(), "--markdown", markdown_path.string()});
  EXPECT_EQ(result.exit_status, 1) << result.out << result.err;
  EXPECT_TRUE(has(result.out,
                  "FAIL role.activation (pid 4000 at its blocks' peak, seq 4): 8.0 MiB "
                  "(8388608 bytes), limit 4.0 MiB"));
  const json report = json::parse(slurp(json_path));
  EXPECT_EQ(report["passed"], false);
  ASSERT_EQ(report["checks"].size(), 1u);
  EXPECT_EQ(report["checks"][0]["name"], "role.activation");
  EXPECT_EQ(report["checks"][0]["subject"], "pid 4000 at its blocks' peak, seq 4");
  EXPECT_EQ(report["checks"][0]["unit"], "bytes");
  EXPECT_EQ(report["checks"][0]["actual"], 8 << 20);
  EXPECT_EQ(report["checks"][0]["limit"], 4 << 20);
  EXPECT_EQ(report["checks"][0]["passed"], false);
  const std::string junit = slurp(junit_path);
  EXPECT_TRUE(has(junit,
                  "<testcase classname=\"vramtrace.gate\" name=\"role.activation (pid 4000 "
                  "at its blocks&apos; peak, seq 4)\">\n      <failure message=\"role."
                  "activation (pid 4000 at its blocks&apos; peak, seq 4): 8.0 MiB (8388608 "
                  "bytes), limit 4.0 MiB\" type=\"role.activation\">"));
  const std::string markdown = slurp(markdown_path);
  EXPECT_TRUE(has(markdown,
                  "| role.activation | pid 4000 at its blocks' peak, seq 4 | 8.0 MiB "
                  "(8388608 bytes) | 4.0 MiB | **FAIL** |"));
}

TEST_F(CliGateRolesTest, ABadRoleOrSizeExits2WithOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"weights=1GiB",
       "unknown role 'weights' (known: parameter, gradient, optimizer_state, "
       "activation, temporary, unknown)"},
      {"activation=lots", "'lots' is not a size"},
      {"activation", "'activation' is not ROLE=SIZE"},
  };
  for (const auto& [term, message] : cases) {
    const CommandResult result = roles_gate({"--max-role", term});
    EXPECT_EQ(result.exit_status, 2) << term << ": " << result.out << result.err;
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_TRUE(has(result.err, message));
  }
}

// A role limit on a trace that has no allocator events is refused, not passed: a CI gate on a
// job that is not PyTorch's would otherwise hold nothing.
TEST_F(CliGateRolesTest, MaxRoleWithoutAllocatorEventsIsRefused) {
  const CommandResult result = gate({"--max-role", "activation=1GiB"});
  EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
  EXPECT_EQ(line_count(result.err), 1u) << result.err;
  EXPECT_TRUE(has(result.err, "a role limit needs allocator events"));

  const auto trace = dir_ / "run.db";
  const CommandResult run = run_vramtrace({"run", "--force", "-o", trace.string(), "--gate",
                                           "role.activation<=1GiB", "--", "/bin/sh", "-c", "true"},
                                          scratch_.path());
  EXPECT_EQ(run.exit_status, 2) << run.err;
  EXPECT_TRUE(has(run.err, "a role limit needs allocator events"));
  const CommandResult bad = run_vramtrace(
      {"run", "--force", "-o", trace.string(), "--gate", "role.weights<=1GiB", "--", "true"},
      scratch_.path());
  EXPECT_EQ(bad.exit_status, 2);
  EXPECT_TRUE(has(bad.err, "unknown role 'weights'"));
}

}  // namespace
}  // namespace vramtrace::testing
