// The CI gate over the synthetic trace of synthetic_trace.h: every limit passes and fails where
// the table says it must; suppressions hide what they match and say so; a baseline is compared
// with; leaks are attributed to test ranges. Also the parsers of sizes, gate specs and
// suppression files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "allocator_trace_test_base.h"
#include "analysis/gate/gate.h"
#include "analysis/gate/gate_spec.h"
#include "analysis/gate/suppressions.h"
#include "analysis/reports/leak_growth.h"
#include "analysis/time/moment.h"
#include "analysis/values/byte_size.h"
#include "roles_trace.h"
#include "sql_query.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

using testing::kKiB;
using testing::kMiB;

// The synthetic trace's leaks (segment level: no allocator events): 20.5 MiB in 8 allocations.
constexpr std::uint64_t kLeakedBytes = 20 * kMiB + 512 * kKiB;
constexpr std::uint64_t kLeakedCount = 8;

class GateTest : public ::testing::Test {
 protected:
  std::unique_ptr<storage::TraceReader> write(const std::string& name,
                                              const std::string& edit_sql = "") {
    const auto path = dir_ / name;
    EXPECT_EQ(testing::write_synthetic_trace(path), "");
    if (!edit_sql.empty()) {
      EXPECT_EQ(testing::execute_sql(path, edit_sql), "");
    }
    storage::OpenFailure failure;
    auto reader = storage::TraceReader::open(path, &failure);
    EXPECT_NE(reader, nullptr) << failure.message;
    return reader;
  }
  GateResult judge(const GateOptions& options, const storage::TraceReader* baseline = nullptr) {
    if (!trace_) trace_ = write("trace.db");
    return evaluate_gate(*trace_, options, baseline);
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

const GateCheck& only_check(const GateResult& result) {
  EXPECT_EQ(result.checks.size(), 1u);
  return result.checks.front();
}

TEST_F(GateTest, LeakedBytesPassAtTheTotalAndFailBelowIt) {
  GateOptions options;
  options.limits.max_leaked_bytes = kLeakedBytes;
  const GateResult at = judge(options);
  EXPECT_TRUE(at.passed());
  EXPECT_EQ(only_check(at).actual, static_cast<double>(kLeakedBytes));
  EXPECT_EQ(at.level, "segment");

  options.limits.max_leaked_bytes = kLeakedBytes - 1;
  const GateResult below = judge(options);
  EXPECT_FALSE(below.passed());
  const GateCheck& check = only_check(below);
  EXPECT_EQ(check.name, "leaked_bytes");
  // The evidence: every leak, largest first, with its stack.
  ASSERT_EQ(check.leaks.size(), 5u);
  EXPECT_EQ(check.leaks[0].bytes, 8 * kMiB);
  EXPECT_EQ(check.leaks[0].stack.front().function, "make_pinned");
}

TEST_F(GateTest, LeakedCountPassesAtTheCountAndFailsBelowIt) {
  GateOptions options;
  options.limits.max_leaked_count = kLeakedCount;
  EXPECT_TRUE(judge(options).passed());
  options.limits.max_leaked_count = kLeakedCount - 1;
  const GateResult result = judge(options);
  EXPECT_FALSE(result.passed());
  EXPECT_EQ(only_check(result).actual, static_cast<double>(kLeakedCount));
}

TEST_F(GateTest, PeakIsJudgedPerProcessAndDevice) {
  // Peaks: pid 4242 device 0 22 MiB, device 1 3 MiB; pid 4300 device 0 3 MiB.
  GateOptions options;
  options.limits.max_peak = 16 * kMiB;
  const GateResult result = judge(options);
  ASSERT_EQ(result.checks.size(), 3u);
  EXPECT_FALSE(result.passed());
  std::vector<std::string> failed;
  for (const GateCheck& check : result.checks)
    if (!check.passed) failed.push_back(check.subject + " " + std::to_string(check.actual));
  EXPECT_EQ(failed, std::vector<std::string>{"pid 4242, device 0 " +
                                             std::to_string(static_cast<double>(22 * kMiB))});
  options.limits.max_peak = 22 * kMiB;
  EXPECT_TRUE(judge(options).passed());
}

TEST_F(GateTest, SuppressionsHideTheirLeaksAndCountWhatTheyHid) {
  SuppressionParseError error;
  GateOptions options;
  options.suppressions = parse_suppressions(
      "# pinned staging buffers live as long as the process\n"
      "function:make_pin*\n"
      "\n"
      "module:libnothing.so\n",
      &error);
  ASSERT_EQ(options.suppressions.size(), 2u);
  options.limits.max_leaked_bytes = kLeakedBytes - 11 * kMiB;  // what is left, exactly
  const GateResult result = judge(options);
  EXPECT_TRUE(result.passed());
  ASSERT_EQ(result.suppressions.size(), 2u);
  // make_pinned is in callsites 4 (8 MiB pinned) and 5 (3 MiB async, under an unnamed frame).
  EXPECT_EQ(result.suppressions[0].leaks, 2u);
  EXPECT_EQ(result.suppressions[0].count, 2u);
  EXPECT_EQ(result.suppressions[0].bytes, 11 * kMiB);
  EXPECT_EQ(result.suppressions[0].rule.reason,
            "pinned staging buffers live as long as the process");
  EXPECT_EQ(result.suppressions[1].leaks, 0u);
  EXPECT_EQ(result.suppressions[1].rule.reason, "");
  options.limits.max_leaked_bytes = kLeakedBytes - 11 * kMiB - 1;
  EXPECT_FALSE(judge(options).passed());
}

TEST_F(GateTest, ModuleRulesMatchThePathOrItsLastComponent) {
  SuppressionParseError error;
  GateOptions options;
  options.suppressions = parse_suppressions("module:libtorch.so\n", &error);
  options.limits.max_leaked_bytes = kLeakedBytes - 3 * kMiB;  // callsite 5's frame in libtorch
  const GateResult result = judge(options);
  EXPECT_TRUE(result.passed());
  EXPECT_EQ(result.suppressions[0].bytes, 3 * kMiB);
}

TEST_F(GateTest, LeakIncreaseAgainstABaselineWithoutOneLeak) {
  // The baseline lacks a4 (8 MiB pinned): this trace leaks 8 MiB more.
  const auto baseline = write(
      "baseline.db",
      "DELETE FROM allocation_detail WHERE id = 4; DELETE FROM allocation_compact WHERE id = 4");
  GateOptions options;
  options.limits.max_leak_increase = 8 * kMiB;
  EXPECT_TRUE(judge(options, baseline.get()).passed());
  options.limits.max_leak_increase = 8 * kMiB - 1;
  const GateResult result = judge(options, baseline.get());
  EXPECT_FALSE(result.passed());
  EXPECT_EQ(only_check(result).actual, static_cast<double>(8 * kMiB));
  EXPECT_FALSE(only_check(result).leaks.empty());
}

TEST_F(GateTest, PeakIncreaseAgainstABaselineInPercent) {
  // Without a7 (16 MiB, freed) the baseline's device 0 peaks at 6.5 MiB instead of 22 MiB.
  const auto baseline = write(
      "baseline.db",
      "DELETE FROM allocation_detail WHERE id = 7; DELETE FROM allocation_compact WHERE id = 7");
  GateOptions options;
  options.limits.max_peak_increase_percent = 10;
  const GateResult result = judge(options, baseline.get());
  ASSERT_EQ(result.checks.size(), 2u);  // devices 0 and 1
  EXPECT_EQ(result.checks[0].subject, "device 0");
  EXPECT_FALSE(result.checks[0].passed);
  EXPECT_NEAR(result.checks[0].actual, (22.0 - 6.5) * 100 / 6.5, 1e-9);
  EXPECT_EQ(result.checks[1].subject, "device 1");
  EXPECT_TRUE(result.checks[1].passed);
  EXPECT_EQ(result.checks[1].actual, 0.0);
  // The same trace as its own baseline: no increase anywhere.
  EXPECT_TRUE(judge(options, trace_.get()).passed());
}

TEST_F(GateTest, APeakWhereTheBaselineHadNoneIsAnInfiniteIncrease) {
  const auto baseline = write(
      "baseline.db",
      "DELETE FROM allocation_detail WHERE id IN (SELECT id FROM allocation WHERE device = 1); "
      "DELETE FROM allocation_compact WHERE id IN (SELECT id FROM allocation WHERE device = 1)");
  GateOptions options;
  options.limits.max_peak_increase_percent = 1000;
  const GateResult result = judge(options, baseline.get());
  ASSERT_EQ(result.checks.size(), 2u);
  EXPECT_TRUE(std::isinf(result.checks[1].actual));
  EXPECT_FALSE(result.checks[1].passed);
}

TEST_F(GateTest, BaselineLimitsWithoutABaselineAreRefused) {
  GateOptions options;
  options.limits.max_leak_increase = 0;
  EXPECT_THROW(judge(options), std::invalid_argument);
}

TEST_F(GateTest, LeaksAreAttributedToTheTestRangesThatMadeThem) {
  trace_ = write("tests.db",
                 "INSERT INTO marker(id, upid, utid, type, source, name, start_seq, start_ns, "
                 "end_seq, end_ns) VALUES "
                 "(100, 1, 1, 'range', 'api', 'test:test_leaky', 3, 0, 5, 0), "
                 "(101, 1, 1, 'range', 'api', 'test:test_clean', 8, 0, 9, 0), "
                 "(102, 1, 1, 'range', 'api', 'not a test', 1, 0, 12, 0)");
  const GateResult result = judge({});
  EXPECT_TRUE(result.checks.empty());
  ASSERT_EQ(result.tests.size(), 2u);
  // seq 3..5 made a3 (2 MiB device) and a4 (8 MiB pinned), both leaked; a7 (seq 8) was freed.
  EXPECT_EQ(result.tests[0].test, "test_leaky");
  EXPECT_EQ(result.tests[0].bytes, 10 * kMiB);
  EXPECT_EQ(result.tests[0].count, 2u);
  EXPECT_EQ(result.tests[0].leaks.size(), 2u);
  EXPECT_EQ(result.tests[1].test, "test_clean");
  EXPECT_EQ(result.tests[1].count, 0u);
}

// The allocator trace (allocator_trace.h) marks 'iter' three times; init_workspace's raw
// allocations are 0, 0, 2 MiB then: +1 MiB per iteration, the only stack that never falls.
class GateGrowthTest : public testing::AllocatorTraceTest {
 protected:
  GateResult judge(std::uint64_t max_growth, std::vector<SuppressionRule> rules = {}) {
    GateOptions options;
    options.limits.max_growth = max_growth;
    options.growth_marker = "iter";
    options.suppressions = std::move(rules);
    return evaluate_gate(*trace_, options);
  }
};

TEST_F(GateGrowthTest, PassesAtTheRateAndFailsBelowItWithTheGrowingStack) {
  const GateResult at = judge(kMiB);
  EXPECT_TRUE(at.passed());
  EXPECT_EQ(only_check(at).actual, static_cast<double>(kMiB));

  const GateResult below = judge(kMiB - 1);
  EXPECT_FALSE(below.passed());
  const GateCheck& check = only_check(below);
  EXPECT_EQ(check.name, "growth");
  EXPECT_EQ(check.unit, "bytes per iteration");
  EXPECT_EQ(check.subject, "pid 5000, 3 iterations of 'iter'");  // pid 5001 has no 'iter'
  ASSERT_EQ(check.leaks.size(), 1u);
  ASSERT_EQ(check.growth.size(), 1u);
  EXPECT_EQ(check.growth[0], static_cast<double>(kMiB));
  EXPECT_EQ(check.leaks[0].bytes, 2 * kMiB);  // live at the last iteration
  ASSERT_FALSE(check.leaks[0].stack.empty());
  EXPECT_EQ(check.leaks[0].stack[0].function, "init_workspace");
}

TEST_F(GateGrowthTest, ASuppressedStackDoesNotGrow) {
  SuppressionParseError parse_error;
  const auto rules =
      parse_suppressions("# the workspace is sized once\nfunction:init_*\n", &parse_error);
  ASSERT_EQ(rules.size(), 1u) << parse_error.message;
  const GateResult result = judge(0, rules);
  EXPECT_TRUE(result.passed());
  EXPECT_EQ(only_check(result).actual, 0.0);
  EXPECT_TRUE(only_check(result).leaks.empty());
}

TEST_F(GateGrowthTest, AMarkerThatNeverRepeatsCannotPass) {
  GateOptions options;
  options.limits.max_growth = kMiB;
  options.growth_marker = "epoch";
  EXPECT_THROW(evaluate_gate(*trace_, options), BadMoment);
}

TEST(LeakGrowth, NumberedRangesAreOccurrencesOfTheirName) {
  EXPECT_TRUE(is_occurrence_of("iteration", "iteration"));
  EXPECT_TRUE(is_occurrence_of("iteration 0", "iteration"));
  EXPECT_TRUE(is_occurrence_of("iteration 12345", "iteration"));
  EXPECT_FALSE(is_occurrence_of("iterations", "iteration"));
  EXPECT_FALSE(is_occurrence_of("iteration ", "iteration"));
  EXPECT_FALSE(is_occurrence_of("iteration x", "iteration"));
  EXPECT_FALSE(is_occurrence_of("iteration 1 2", "iteration"));
  EXPECT_FALSE(is_occurrence_of("step 1", "iteration"));
}

TEST(ByteSize, UnitsAndTheirPowers) {
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("512"), 512u);
  EXPECT_EQ(parse_byte_size("512B"), 512u);
  EXPECT_EQ(parse_byte_size("2KiB"), 2048u);
  EXPECT_EQ(parse_byte_size("2 MiB"), 2u << 20);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("2gib"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1TiB"), 1ull << 40);
  EXPECT_EQ(parse_byte_size("3KB"), 3000u);
  EXPECT_EQ(parse_byte_size("2MB"), 2'000'000u);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1'500'000'000u);
  EXPECT_EQ(parse_byte_size("4TB"), 4'000'000'000'000u);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char* text :
       {"", "-1", "MiB", "12Q", "1.5", "0x10", "1e3", "20000000000TB", "18446744073709551616"})
    EXPECT_EQ(parse_byte_size(text), std::nullopt) << text;
  EXPECT_EQ(parse_byte_size("18446744073709551615"), UINT64_MAX);
}

TEST(GateSpec, TermsSetTheirLimits) {
  GateLimits limits;
  std::string error;
  ASSERT_TRUE(parse_gate_spec(" leaked_bytes=0, leaked_count<=10 ,peak<=2GiB,growth<=1MiB", &limits,
                              &error))
      << error;
  EXPECT_EQ(limits.max_leaked_bytes, 0u);
  EXPECT_EQ(limits.max_leaked_count, 10u);
  EXPECT_EQ(limits.max_peak, 2ull << 30);
  EXPECT_EQ(limits.max_growth, 1u << 20);
}

TEST(GateSpec, RoleTermsSetTheRolesLimits) {
  GateLimits limits;
  std::string error;
  ASSERT_TRUE(
      parse_gate_spec("role.activation<=4GiB, role.optimizer_state=512MiB", &limits, &error))
      << error;
  EXPECT_EQ(limits.max_role[static_cast<std::size_t>(BlockRole::kActivation)], 4ull << 30);
  EXPECT_EQ(limits.max_role[static_cast<std::size_t>(BlockRole::kOptimizerState)], 512u << 20);
  EXPECT_EQ(limits.max_role[static_cast<std::size_t>(BlockRole::kParameter)], std::nullopt);
  EXPECT_TRUE(limits.any_role());
}

TEST(GateSpec, MalformedSpecsSayWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "the gate names no limit"},
      {"leaked_bytes", "'leaked_bytes' is not NAME=VALUE or NAME<=VALUE"},
      {"leaks=0",
       "unknown limit 'leaks' (known: leaked_bytes, leaked_count, peak, growth, role.ROLE)"},
      {"role.weights<=1GiB",
       "unknown role 'weights' (known: parameter, gradient, optimizer_state, activation, "
       "temporary, unknown)"},
      {"role.activation<=lots", "'lots' is not a size (such as 0, 512MiB, 2GB)"},
      {"peak<=lots", "'lots' is not a size (such as 0, 512MiB, 2GB)"},
      {"leaked_count=1KiB", "leaked_count takes a plain count, not '1KiB'"},
  };
  for (const auto& [spec, message] : cases) {
    GateLimits limits;
    std::string error;
    EXPECT_FALSE(parse_gate_spec(spec, &limits, &error)) << spec;
    EXPECT_EQ(error, message) << spec;
  }
}

// The roles trace (tests/unit/roles_trace.h): pid 4000's blocks peak at seq 4 with 8 MiB of
// activations, 4 MiB of temporaries and 1 MiB of parameters; pid 4100 has no allocator events.
class GateRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(testing::write_roles_trace(dir_ / "roles.db"), "");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(dir_ / "roles.db", &failure);
    ASSERT_NE(trace_, nullptr) << failure.message;
  }
  GateResult judge(BlockRole role, std::uint64_t limit) {
    GateOptions options;
    options.limits.max_role[static_cast<std::size_t>(role)] = limit;
    return evaluate_gate(*trace_, options);
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

TEST_F(GateRolesTest, ARolePassesAtItsBytesAtThePeakAndFailsBelowThem) {
  const GateResult at = judge(BlockRole::kActivation, 8 * kMiB);
  const GateCheck& check = only_check(at);
  EXPECT_EQ(check.name, "role.activation");
  EXPECT_EQ(check.subject, "pid 4000 at its blocks' peak, seq 4");
  EXPECT_EQ(check.unit, "bytes");
  EXPECT_EQ(check.actual, 8.0 * kMiB);
  EXPECT_TRUE(at.passed());
  EXPECT_FALSE(judge(BlockRole::kActivation, 8 * kMiB - 1).passed());
  EXPECT_FALSE(judge(BlockRole::kTemporary, 4 * kMiB - 1).passed());
  // No gradient is live at the peak (it is made in backward, after it).
  EXPECT_TRUE(judge(BlockRole::kGradient, 0).passed());
}

TEST_F(GateRolesTest, AProcessWithoutAllocatorEventsIsNamedInTheWarnings) {
  const GateResult result = judge(BlockRole::kParameter, 1 * kMiB);
  EXPECT_EQ(only_check(result).actual, 1.0 * kMiB);
  EXPECT_NE(std::find(result.warnings.begin(), result.warnings.end(),
                      "pid 4100 recorded GPU memory but no allocator events: the role limits do "
                      "not judge it"),
            result.warnings.end());
}

TEST_F(GateRolesTest, EachRoleGivenIsACheck) {
  GateOptions options;
  options.limits.max_role[static_cast<std::size_t>(BlockRole::kParameter)] = 2 * kMiB;
  options.limits.max_role[static_cast<std::size_t>(BlockRole::kTemporary)] = 1 * kMiB;
  const GateResult result = evaluate_gate(*trace_, options);
  ASSERT_EQ(result.checks.size(), 2u);
  EXPECT_EQ(result.checks[0].name, "role.parameter");
  EXPECT_TRUE(result.checks[0].passed);
  EXPECT_EQ(result.checks[1].name, "role.temporary");
  EXPECT_FALSE(result.checks[1].passed);
}

// A role limit on a trace with no allocator events cannot be judged: refused, not passed.
TEST_F(GateTest, RoleLimitsWithoutAllocatorEventsAreRefused) {
  GateOptions options;
  options.limits.max_role[static_cast<std::size_t>(BlockRole::kActivation)] = 1 * kMiB;
  EXPECT_THROW(judge(options), BadMoment);
}

TEST(Suppressions, ParseErrorsNameTheLine) {
  SuppressionParseError error;
  EXPECT_TRUE(parse_suppressions("# only comments\n\n", &error).empty());
  EXPECT_EQ(error.line, 0);
  EXPECT_TRUE(parse_suppressions("function:ok\nleak:foo\n", &error).empty());
  EXPECT_EQ(error.line, 2);
  EXPECT_NE(error.message.find("'leak:foo'"), std::string::npos);
  EXPECT_TRUE(parse_suppressions("file:\n", &error).empty());
  EXPECT_EQ(error.line, 1);
  EXPECT_EQ(error.message, "a rule without a pattern");
}

TEST(Suppressions, GlobsMatchFunctionsFilesAndModules) {
  SuppressionParseError error;
  const auto rules = parse_suppressions(
      "function:cublas*\nfile:*/torch/distributed/*\nmodule:libnccl.so*\n", &error);
  ASSERT_EQ(rules.size(), 3u);
  storage::StackFrame cublas;
  cublas.function = "cublasCreate_v2";
  storage::StackFrame distributed;
  distributed.file = "/usr/lib/python3/site-packages/torch/distributed/c10d.py";
  storage::StackFrame nccl;
  nccl.module = "/opt/nccl/lib/libnccl.so.2";
  storage::StackFrame other;
  other.function = "main";
  other.module = "/usr/bin/app";
  EXPECT_EQ(matching_rule(rules, {other, cublas}), 0u);
  EXPECT_EQ(matching_rule(rules, {distributed}), 1u);
  EXPECT_EQ(matching_rule(rules, {nccl}), 2u);
  EXPECT_EQ(matching_rule(rules, {other}), std::nullopt);
  EXPECT_EQ(rules[2].text(), "module:libnccl.so*");
}

}  // namespace
}  // namespace vramtrace::analysis
