// The CI leak gate: a trace (and optionally a baseline trace) against limits, with the evidence
// for every limit it breaks. `vramtrace gate` and `vramtrace run --gate` print what this finds.
//
// Checks, each made only when its limit is given:
// - leaked_bytes, leaked_count: the leak report's totals (leak_report.h, at the chosen level),
//   after suppressions (suppressions.h); the evidence is the leaks, largest first.
// - peak: the most device memory each process held on each device at once (device_peaks.h:
//   device allocations, managed, async and VMM mappings, what the allocator reserved, not only
//   its tensors), one check per process and device.
// - peak_increase (percent) and leak_increase (bytes): against the baseline trace, the largest
//   peak of any process on each device, and the leaked bytes after suppressions.
// - growth (bytes per iteration): per process, the sum over the stacks whose live bytes rise
//   from one occurrence of the iteration marker to the next (leak_growth.h), after
//   suppressions; the evidence is those stacks, fastest growing first. A leak in progress
//   fails here even when the program frees everything at its end.
// - role.ROLE (bytes): per process with allocator events, the live bytes of that role
//   (block_roles.h) at the blocks' peak (max_memory_allocated's moment), one check per role
//   given and process. Refused (BadMoment) when no selected process has allocator events: a
//   role limit on a job that is not PyTorch's must not pass; a selected process that recorded
//   GPU memory without allocator events is named in the warnings.
// A trace whose recording has gaps (trace_warnings.h, recording_gaps()) is not vouched for unless
// the gaps are accepted: a leak in what was not recorded cannot fail a check.
// Leaks are also attributed to tests: a range marker named "test:ID" (the pytest plugin and the
// GoogleTest listener make one per test) owns the leaks allocated inside it by its process.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gate/suppressions.h"
#include "analysis/reports/leak_report.h"
#include "analysis/roles/block_roles.h"
#include "analysis/scope/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct GateLimits {
  std::optional<std::uint64_t> max_leaked_bytes;
  std::optional<std::uint64_t> max_leaked_count;
  std::optional<std::uint64_t> max_peak;            // bytes, per process and device
  std::optional<double> max_peak_increase_percent;  // needs a baseline
  std::optional<std::uint64_t> max_leak_increase;   // bytes; needs a baseline
  std::optional<std::uint64_t> max_growth;          // bytes per iteration, per process
  // bytes per role (indexed by BlockRole), per process, at its blocks' peak
  std::array<std::optional<std::uint64_t>, kBlockRoles> max_role;

  bool needs_baseline() const { return max_peak_increase_percent || max_leak_increase; }
  bool any_role() const {
    for (const std::optional<std::uint64_t>& limit : max_role)
      if (limit) return true;
    return false;
  }
};

struct GateOptions {
  GateLimits limits;
  std::optional<LeakLevel> level;
  ProcessSelection processes;  // of the trace under test; the baseline is taken whole
  std::vector<SuppressionRule> suppressions;
  // The marker whose occurrences are the iterations of the growth check: ranges or marks of
  // this name, or numbered "<name> <n>" as vramtrace.iteration() makes them. Empty: per
  // process, the marker "iteration" where it has one, else its backward passes (leak_growth.h).
  std::string growth_marker;
  // Judge what was recorded even where the recording has gaps (recording_gaps()): by default a
  // trace with gaps is not vouched for, whatever its checks say.
  bool accept_gaps = false;
};

struct GateCheck {
  // "leaked_bytes", "leaked_count", "peak", "peak_increase", "leak_increase", "growth",
  // "role.ROLE" ("role.activation")
  std::string name;
  // what was measured: "all processes", "pid 4242, device 0", "device 0",
  // "pid 4242 at its blocks' peak"
  std::string subject;
  std::string unit;   // "bytes", "allocations", "percent" or "bytes per iteration"
  double actual = 0;  // for peak_increase with a baseline of 0 bytes: infinity
  double limit = 0;
  // Checks of whole bytes or allocations: the values exactly (actual and limit are doubles,
  // which are not past 2^53).
  std::optional<std::uint64_t> exact_actual, exact_limit;
  bool passed = true;
  std::vector<LeakGroup> leaks;  // leak checks: the leaks that count, largest first
  // growth checks: each of `leaks`' bytes per iteration (its bytes and count are those live
  // at the last iteration looked at).
  std::vector<double> growth;
};

struct SuppressionUse {
  SuppressionRule rule;
  std::uint64_t leaks = 0;  // groups hidden
  std::uint64_t count = 0;  // allocations hidden
  std::uint64_t bytes = 0;
};

struct TestLeaks {
  std::string test;  // the marker's name without "test:"
  std::int64_t upid = 0;
  std::uint64_t bytes = 0, count = 0;
  std::vector<LeakGroup> leaks;  // after suppressions
};

struct GateResult {
  std::string level;  // of the leak checks: "block" or "segment"
  std::vector<GateCheck> checks;
  std::vector<SuppressionUse> suppressions;  // one per rule, in the file's order
  std::vector<TestLeaks> tests;              // by start of the test
  std::vector<std::string> warnings;         // the trace's (incomplete, data loss...)
  // What the recording did not see (recording_gaps()), of the processes judged: a leak there
  // could not have been found.
  std::vector<std::string> gaps;
  bool gaps_accepted = false;  // GateOptions::accept_gaps

  // Every check holds.
  bool passed() const;
  // The checks can be trusted: the recording has no gaps, or they were accepted.
  bool vouched() const { return gaps.empty() || gaps_accepted; }
};

// Throws std::invalid_argument when a baseline limit is given without a baseline, and
// BadMoment (moment.h) when the growth limit is given but no selected process has the
// iteration marker twice, or a role limit but no selected process has allocator events: a
// check that cannot be made must not pass.
GateResult evaluate_gate(const storage::TraceReader& trace, const GateOptions& options,
                         const storage::TraceReader* baseline = nullptr);

inline constexpr std::string_view kTestMarkerPrefix = "test:";

}  // namespace vramtrace::analysis
