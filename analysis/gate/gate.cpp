#include "analysis/gate/gate.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "analysis/reports/leak_growth.h"
#include "analysis/reports/trace_warnings.h"
#include "analysis/scope/process_chains.h"
#include "analysis/time/device_peaks.h"
#include "analysis/time/moment.h"
#include "analysis/time/report_time_index.h"
#include "analysis/time/trace_peaks.h"

namespace vramtrace::analysis {
namespace {

// Drops the suppressed groups from `report`, fixing its totals; adds what each rule hid to
// `uses` when given.
void apply_suppressions(LeakReport* report, const std::vector<SuppressionRule>& rules,
                        std::vector<SuppressionUse>* uses) {
  if (rules.empty()) return;
  std::vector<LeakGroup> kept;
  for (LeakGroup& group : report->groups) {
    const std::optional<std::size_t> rule = matching_rule(rules, group.stack);
    if (!rule) {
      kept.push_back(std::move(group));
      continue;
    }
    report->total_bytes -= group.bytes;
    report->total_count -= group.count;
    if (uses != nullptr) {
      SuppressionUse& use = (*uses)[*rule];
      use.leaks += 1;
      use.count += group.count;
      use.bytes += group.bytes;
    }
  }
  report->groups = std::move(kept);
}

// The trace's time index where it keeps one, else null (the leaks are then found by a scan,
// the same report): a trace that cannot be indexed is judged all the same.
std::unique_ptr<storage::TimeIndex> index_if_kept(const storage::TraceReader& trace) {
  try {
    return open_time_index_if_kept(trace);
  } catch (const storage::TraceError&) {
    return nullptr;
  }
}

LeakReport leaks_after_suppressions(const storage::TraceReader& trace,
                                    const storage::TimeIndex* index,
                                    const LeakReportOptions& options,
                                    const std::vector<SuppressionRule>& rules,
                                    std::vector<SuppressionUse>* uses) {
  LeakReport report = build_leak_report_at_end(trace, index, options);
  apply_suppressions(&report, rules, uses);
  return report;
}

GateCheck at_most(std::string name, std::string subject, std::string unit, double actual,
                  double limit) {
  GateCheck check;
  check.name = std::move(name);
  check.subject = std::move(subject);
  check.unit = std::move(unit);
  check.actual = actual;
  check.limit = limit;
  check.passed = actual <= limit;
  return check;
}

// A check of whole bytes or allocations, compared and kept exactly (a double is not past 2^53).
GateCheck at_most(std::string name, std::string subject, std::string unit, std::uint64_t actual,
                  std::uint64_t limit) {
  GateCheck check = at_most(std::move(name), std::move(subject), std::move(unit),
                            static_cast<double>(actual), static_cast<double>(limit));
  check.exact_actual = actual;
  check.exact_limit = limit;
  check.passed = actual <= limit;
  return check;
}

// The largest peak of any selected process, per device.
std::map<int, std::uint64_t> peak_by_device(const storage::TraceReader& trace,
                                            const storage::TimeIndex* index,
                                            const ProcessSelection& processes) {
  std::map<int, std::uint64_t> peaks;
  for (const DevicePeak& peak : find_device_peaks(trace, index, processes))
    peaks[peak.device] = std::max(peaks[peak.device], peak.bytes);
  return peaks;
}

std::vector<TestLeaks> leaks_by_test(const storage::TraceReader& trace,
                                     const storage::TimeIndex* index, const GateOptions& options) {
  std::vector<TestLeaks> tests;
  for (const storage::MarkerRecord& marker : trace.markers()) {
    const storage::MarkerRow& start = marker.start;
    if (start.type != storage::kMarkerRange || !start.name.starts_with(kTestMarkerPrefix)) continue;
    if (!is_selected(options.processes, start.upid)) continue;
    LeakReportOptions in_test;
    in_test.upid = start.upid;
    in_test.level = options.level;
    in_test.allocated_in =
        LeakReportOptions::SeqRange{start.start_seq, marker.end ? marker.end->end_seq : UINT64_MAX};
    const LeakReport report =
        leaks_after_suppressions(trace, index, in_test, options.suppressions, nullptr);
    TestLeaks test;
    test.test = start.name.substr(kTestMarkerPrefix.size());
    test.upid = start.upid;
    test.bytes = report.total_bytes;
    test.count = report.total_count;
    test.leaks = report.groups;
    tests.push_back(std::move(test));
  }
  return tests;
}

// Iterations looked at per process: as `leaks --growth` by default; enough to see a steady
// rise, and the index reads stay small on a long run.
constexpr std::size_t kGrowthIterations = 32;

// One check per role given and process with allocator events, at the process's blocks' peak.
// The processes that recorded GPU memory without allocator events are named in `warnings`.
std::vector<GateCheck> role_checks(const storage::TraceReader& trace, const GateOptions& options,
                                   std::vector<std::string>* warnings) {
  const std::unique_ptr<storage::TimeIndex> index = open_time_index(trace);
  const std::set<std::int64_t> with_allocator = index->processes_with_allocator_events();
  const bool any = std::any_of(with_allocator.begin(), with_allocator.end(),
                               [&](std::int64_t u) { return is_selected(options.processes, u); });
  if (!any)
    throw BadMoment(
        "a role limit needs allocator events (PyTorch's caching allocator), and no selected "
        "process has any: its roles cannot be judged");
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& p : trace.processes()) pids[p.start.upid] = p.start.pid;
  for (const std::int64_t upid : trace.upids_with_gpu_events()) {
    if (!is_selected(options.processes, upid) || with_allocator.contains(upid)) continue;
    warnings->push_back(fmt::format(
        "pid {} recorded GPU memory but no allocator events: the role limits do not judge it",
        pids[upid]));
  }
  std::vector<GateCheck> checks;
  for (const ProcessRoles& process :
       build_role_report(trace, *index, parse_moment("peak"), options.processes)) {
    for (std::size_t r = 0; r < kBlockRoles; ++r) {
      const std::optional<std::uint64_t>& limit = options.limits.max_role[r];
      if (!limit) continue;
      checks.push_back(
          at_most(fmt::format("role.{}", block_role_name(static_cast<BlockRole>(r))),
                  fmt::format("pid {} at its blocks' peak, seq {}", process.pid, process.seq),
                  "bytes", std::uint64_t{process.live.bytes[r]}, std::uint64_t{*limit}));
    }
  }
  return checks;
}

// One check per process that has two iterations: the bytes per iteration of the stacks that
// grow, the suppressed ones left out.
std::vector<GateCheck> growth_checks(const storage::TraceReader& trace, const GateOptions& options,
                                     const LeakReportOptions& leak_options) {
  const std::unique_ptr<storage::TimeIndex> index = open_time_index(trace);
  const LeakGrowth growth =
      build_leak_growth(trace, *index, options.growth_marker, kGrowthIterations, leak_options);
  std::vector<GateCheck> checks;
  for (const ProcessIterations& process : growth.processes) {
    std::vector<LeakGroup> growing;
    std::vector<double> rates;
    double per_iteration = 0;
    for (const GrowingGroup& entry : growth.growing) {
      if (entry.upid != process.upid ||
          matching_rule(options.suppressions, entry.group.stack).has_value())
        continue;
      per_iteration += entry.bytes_per_iteration;
      growing.push_back(entry.group);
      rates.push_back(entry.bytes_per_iteration);
    }
    GateCheck check = at_most("growth",
                              fmt::format("{}, {}", process_label(process.pid, process.rank),
                                          describe_iterations(process)),
                              "bytes per iteration", per_iteration,
                              static_cast<double>(*options.limits.max_growth));
    check.leaks = std::move(growing);
    check.growth = std::move(rates);
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace

bool GateResult::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const GateCheck& c) { return c.passed; });
}

GateResult evaluate_gate(const storage::TraceReader& trace, const GateOptions& options,
                         const storage::TraceReader* baseline) {
  const GateLimits& limits = options.limits;
  if (limits.needs_baseline() && baseline == nullptr)
    throw std::invalid_argument("--max-peak-increase and --max-leak-increase need --baseline");

  GateResult result;
  for (const SuppressionRule& rule : options.suppressions) result.suppressions.push_back({rule});
  LeakReportOptions leak_options;
  leak_options.processes = options.processes;
  leak_options.level = options.level;
  const std::unique_ptr<storage::TimeIndex> index = index_if_kept(trace);
  const std::unique_ptr<storage::TimeIndex> baseline_index =
      limits.needs_baseline() ? index_if_kept(*baseline) : nullptr;
  const LeakReport leaks = leaks_after_suppressions(trace, index.get(), leak_options,
                                                    options.suppressions, &result.suppressions);
  result.level = leaks.level;
  result.warnings = leaks.warnings;
  result.gaps = recording_gaps(trace, options.processes);
  result.gaps_accepted = options.accept_gaps;

  if (limits.max_leaked_bytes) {
    GateCheck check =
        at_most("leaked_bytes", "all processes", "bytes", std::uint64_t{leaks.total_bytes},
                std::uint64_t{*limits.max_leaked_bytes});
    check.leaks = leaks.groups;
    result.checks.push_back(std::move(check));
  }
  if (limits.max_leaked_count) {
    GateCheck check =
        at_most("leaked_count", "all processes", "allocations", std::uint64_t{leaks.total_count},
                std::uint64_t{*limits.max_leaked_count});
    check.leaks = leaks.groups;
    result.checks.push_back(std::move(check));
  }
  if (limits.max_peak) {
    for (const DevicePeak& peak : find_device_peaks(trace, index.get(), options.processes)) {
      result.checks.push_back(
          at_most("peak", fmt::format("pid {}, device {}", peak.pid, peak.device), "bytes",
                  std::uint64_t{peak.bytes}, std::uint64_t{*limits.max_peak}));
    }
  }
  if (limits.any_role()) {
    for (GateCheck& check : role_checks(trace, options, &result.warnings))
      result.checks.push_back(std::move(check));
  }
  if (limits.max_peak_increase_percent) {
    const std::map<int, std::uint64_t> now = peak_by_device(trace, index.get(), options.processes);
    const std::map<int, std::uint64_t> before =
        peak_by_device(*baseline, baseline_index.get(), std::nullopt);
    for (const auto& [device, bytes] : now) {
      const auto old = before.find(device);
      const double base = old == before.end() ? 0.0 : static_cast<double>(old->second);
      const double increase = base > 0
                                  ? (static_cast<double>(bytes) - base) * 100.0 / base
                                  : (bytes > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      result.checks.push_back(at_most("peak_increase", fmt::format("device {}", device), "percent",
                                      increase, *limits.max_peak_increase_percent));
    }
  }
  if (limits.max_leak_increase) {
    LeakReportOptions whole;
    whole.level = options.level;
    const LeakReport old = leaks_after_suppressions(*baseline, baseline_index.get(), whole,
                                                    options.suppressions, nullptr);
    GateCheck check =
        at_most("leak_increase", "all processes", "bytes",
                static_cast<double>(leaks.total_bytes) - static_cast<double>(old.total_bytes),
                static_cast<double>(*limits.max_leak_increase));
    if (!check.passed) check.leaks = leaks.groups;
    result.checks.push_back(std::move(check));
  }
  if (limits.max_growth) {
    for (GateCheck& check : growth_checks(trace, options, leak_options))
      result.checks.push_back(std::move(check));
  }
  result.tests = leaks_by_test(trace, index.get(), options);
  return result;
}

}  // namespace vramtrace::analysis
