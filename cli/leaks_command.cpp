#include "cli/leaks_command.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "analysis/scope/process_chains.h"
#include "cli/csv_table.h"
#include "cli/exit_status.h"
#include "cli/leaks_output.h"
#include "cli/output_format.h"
#include "cli/stack_json.h"
#include "cli/time_query.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

// --at, --between and --growth, as given; all empty: the end of the trace.
struct LeaksWhen {
  std::string at;
  std::vector<std::string> between;
  bool growth = false;        // --growth, with or without a marker
  std::string growth_marker;  // empty: found per process (analysis/reports/leak_growth.h)
  std::size_t iterations = 32;
  bool merge_ranks = false;  // --merge-ranks
};

Json moments_json(const std::vector<analysis::ProcessMoment>& moments) {
  Json out = Json::array();
  for (const analysis::ProcessMoment& moment : moments) {
    out.push_back({{"upid", moment.upid},
                   {"pid", moment.pid},
                   {"seq", moment.seq},
                   {"time_ns", moment.time_ns ? Json(*moment.time_ns) : Json(nullptr)}});
  }
  return out;
}

std::string moments_text(const std::vector<analysis::ProcessMoment>& moments) {
  std::string text;
  for (const analysis::ProcessMoment& moment : moments)
    text += fmt::format("{}pid {} at seq {}", text.empty() ? "" : ", ", moment.pid, moment.seq);
  return text;
}

analysis::LeakReportOptions options_for(const ReportScope& scope, const LeaksWhen& when) {
  analysis::LeakReportOptions options;
  options.processes = scope.processes;
  options.level = scope.level;
  options.allocations = scope.allocations;
  options.merge_ranks = when.merge_ranks;
  return options;
}

// The end: analysis decides between the index and one scan (build_leak_report_at_end). Any
// other moment needs the time index.
analysis::LeakReport leak_report(const storage::TraceReader& trace, const ReportScope& scope,
                                 const LeaksWhen& when) {
  const analysis::LeakReportOptions options = options_for(scope, when);
  if (when.at.empty() && when.between.empty()) {
    return analysis::build_leak_report_at_end(trace, analysis::open_time_index_if_kept(trace).get(),
                                              options);
  }
  const std::unique_ptr<storage::TimeIndex> time_index = analysis::open_time_index(trace);
  const analysis::MomentSpec at = moment_from_option(
      when.between.empty() ? (when.at.empty() ? "end" : when.at) : when.between[1]);
  std::optional<analysis::MomentSpec> since;
  if (!when.between.empty()) since = moment_from_option(when.between[0]);
  return query_time_index("leaks", *time_index, [&](const storage::TimeIndex& index) {
    return analysis::build_leak_report_at(trace, index, at, since, options);
  });
}

analysis::LeakGrowth leak_growth(const storage::TraceReader& trace, const ReportScope& scope,
                                 const LeaksWhen& when) {
  return with_time_index("leaks", trace, [&](const storage::TimeIndex& index) {
    return analysis::build_leak_growth(trace, index, when.growth_marker, when.iterations,
                                       options_for(scope, when));
  });
}

Json leaks_json(const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope, const LeaksWhen& when) {
  if (when.growth) return leak_growth_json(path, leak_growth(trace, scope, when));
  const analysis::LeakReport report = leak_report(trace, scope, when);
  Json document = leak_report_json(path, report);
  if (!when.at.empty() || !when.between.empty()) document["at"] = moments_json(report.at);
  if (!when.between.empty()) document["since"] = moments_json(report.since);
  return document;
}

std::string leaks_text(const std::string& path, const storage::TraceReader& trace,
                       const ReportScope& scope, const LeaksWhen& when) {
  if (when.growth)
    return leak_growth_text(path, leak_growth(trace, scope, when), scope.describe(), scope.stacks);
  const analysis::LeakReport report = leak_report(trace, scope, when);
  std::string text;
  if (!when.between.empty()) {
    text = fmt::format("counting what was allocated after {} ({}) and still live at {} ({})\n",
                       when.between[0], moments_text(report.since), when.between[1],
                       moments_text(report.at));
  } else if (!when.at.empty()) {
    text = fmt::format("counting what was live at {} ({})\n", when.at, moments_text(report.at));
  }
  return text + leak_report_text(path, report, scope.describe(), scope.stacks);
}

std::string leaks_csv(const storage::TraceReader& trace, const ReportScope& scope,
                      const LeaksWhen& when) {
  if (when.growth) throw ReportRefusal("--format csv does not take --growth");
  return leak_report_csv(leak_report(trace, scope, when));
}

}  // namespace

void register_leaks_command(CLI::App& app, int* exit_status) {
  auto when = std::make_shared<LeaksWhen>();
  register_report_command(
      app, exit_status,
      {"leaks", "Report memory never freed, grouped by allocation stack and kind, largest first",
       [when](const std::string& path, const storage::TraceReader& trace,
              const ReportScope& scope) { return leaks_json(path, trace, scope, *when); },
       [when](const std::string& path, const storage::TraceReader& trace,
              const ReportScope& scope) { return leaks_text(path, trace, scope, *when); },
       [when](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return leaks_csv(trace, scope, *when);
       },
       [when](CLI::App* sub) {
         constexpr const char* kWhen = "When (one of these; default: the end of the trace)";
         auto* at =
             sub->add_option("--at", when->at,
                             std::string("Count what was live at a moment instead: ") + kMomentHelp)
                 ->group(kWhen);
         auto* between =
             sub->add_option("--between", when->between,
                             "M1 M2: count what was allocated after moment M1 and still live at "
                             "M2 (moments as for --at; a marker's name#K is its K-th occurrence)")
                 ->expected(2)
                 ->group(kWhen);
         auto* growth =
             sub->add_option_function<std::string>(
                    "--growth",
                    [when](const std::string& marker) {
                      when->growth = true;
                      when->growth_marker = marker;
                    },
                    "[MARKER]: the stacks whose live bytes rise from one iteration to the next, "
                    "with bytes per iteration. Iterations are the occurrences of MARKER; without "
                    "one, of 'iteration' where a process has it, else its training loop's, found "
                    "from its backward passes")
                 ->expected(0, 1)
                 ->group(kWhen);
         at->excludes(between)->excludes(growth);
         between->excludes(growth);
         sub->add_flag("--merge-ranks", when->merge_ranks,
                       "Add up the ranks of a distributed job: one group per stack and kind. By "
                       "default, where two selected processes or more recorded a rank, each "
                       "group is one process's, named by its rank");
         sub->add_option("--iterations", when->iterations,
                         "With --growth: iterations looked at, evenly spaced, first and last "
                         "included (default 32)")
             ->check(CLI::Range(std::size_t{2}, std::size_t{100000}))
             ->needs(growth)
             ->group(kWhen);
       },
       true});
}

}  // namespace vramtrace::cli
