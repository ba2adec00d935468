#include "cli/diff_command.h"

#include <fmt/core.h>

#include <memory>

#include "cli/csv_table.h"
#include "cli/exit_status.h"
#include "cli/progress_line.h"
#include "cli/report_scope.h"
#include "cli/stack_json.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_stack;

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

// "+4.0 MiB", "-512 B", "0 B".
std::string signed_bytes(std::int64_t change) {
  if (change == 0) return "0 B";
  const std::uint64_t magnitude =
      change < 0 ? static_cast<std::uint64_t>(-change) : static_cast<std::uint64_t>(change);
  return (change < 0 ? "-" : "+") + format_bytes(magnitude);
}

std::int64_t change_of(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a);
}

Json side_by_side(std::uint64_t a, std::uint64_t b) {
  return {{"a", a}, {"b", b}, {"change", change_of(a, b)}};
}

std::string before_after(std::uint64_t a, std::uint64_t b) {
  return fmt::format("{} ({} -> {})", signed_bytes(change_of(a, b)), format_bytes(a),
                     format_bytes(b));
}

}  // namespace

Json trace_diff_json(const std::string& path_a, const std::string& path_b,
                     const analysis::TraceDiff& diff) {
  Json changes = Json::array();
  for (const analysis::CallsiteChange& c : diff.changes) {
    changes.push_back({{"kind", c.kind_name},
                       {"peak", side_by_side(c.peak_a, c.peak_b)},
                       {"leaked", side_by_side(c.leaked_a, c.leaked_b)},
                       {"stack", stack_json(c.stack)}});
  }
  return {{"a", path_a},
          {"b", path_b},
          {"level", diff.level},
          {"peak", side_by_side(diff.peak_a, diff.peak_b)},
          {"leaked", side_by_side(diff.leaked_a, diff.leaked_b)},
          {"unchanged", diff.unchanged},
          {"changes", std::move(changes)}};
}

std::string trace_diff_text(const std::string& path_a, const std::string& path_b,
                            const analysis::TraceDiff& diff, const std::string& scope,
                            text::StackView stacks) {
  std::string text =
      fmt::format("vramtrace diff: {} -> {} ({} level)\n", path_a, path_b, diff.level);
  if (!scope.empty()) text += scope + "\n";
  text += fmt::format("peak (callsites' peaks added up): {}\nleaked: {}\n",
                      before_after(diff.peak_a, diff.peak_b),
                      before_after(diff.leaked_a, diff.leaked_b));
  text += fmt::format("{} changed, {} unchanged\n",
                      count_of(diff.changes.size(), "callsite", "callsites"), diff.unchanged);
  for (const analysis::CallsiteChange& c : diff.changes) {
    text += fmt::format("\n{}: peak {}, leaked {}{}\n",
                        c.score() > 0 ? "regression" : (c.score() < 0 ? "improvement" : "moved"),
                        before_after(c.peak_a, c.peak_b), before_after(c.leaked_a, c.leaked_b),
                        fmt::format(", {} allocations{}", c.kind_name,
                                    c.stack.empty() ? " (no stack recorded)" : " from:"));
    text += format_stack(c.stack, stacks, "    ");
  }
  return text;
}

std::string trace_diff_csv(const analysis::TraceDiff& diff) {
  CsvTable table({"kind", "peak_a", "peak_b", "peak_change", "leaked_a", "leaked_b",
                  "leaked_change", "function", "file", "line", "stack"});
  for (const analysis::CallsiteChange& c : diff.changes) {
    std::vector<std::string> fields{c.kind_name,
                                    csv_number(c.peak_a),
                                    csv_number(c.peak_b),
                                    csv_number(c.peak_change()),
                                    csv_number(c.leaked_a),
                                    csv_number(c.leaked_b),
                                    csv_number(c.leaked_change())};
    for (std::string& field : csv_frame_fields(c.stack)) fields.push_back(std::move(field));
    fields.push_back(csv_stack(c.stack));
    table.row(fields);
  }
  return table.text();
}

void register_diff_command(CLI::App& app, int* exit_status) {
  struct Options {
    std::string a;
    std::optional<std::string> b;
    ReportOptions report;
    // B's processes where they are not A's: two ranks of one job side by side.
    std::optional<std::uint32_t> b_pid;
    std::optional<int> b_rank;
    std::optional<std::string> b_host;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "diff",
      "Compare two traces, or two processes of one (ranks of a job): per callsite, the change in "
      "peak and in leaked bytes, regressions first");
  sub->add_option("A", options->a, "The trace before (the baseline)")->required();
  sub->add_option("B", options->b,
                  "The trace after (the change); left out, A again, with --b-rank, --b-pid or "
                  "--b-host naming the processes to compare");
  add_report_options(sub, &options->report);
  add_stack_view_option(sub, &options->report);
  constexpr const char* kGroupB = "B's processes, where they are not A's";
  sub->add_option("--b-pid", options->b_pid, "In B, processes with this pid instead")
      ->group(kGroupB);
  sub->add_option("--b-rank", options->b_rank,
                  "In B, processes of this rank instead: `diff run.db --rank 0 --b-rank 1` "
                  "puts rank 1 against rank 0")
      ->group(kGroupB);
  sub->add_option("--b-host", options->b_host, "In B, processes on this host instead")
      ->group(kGroupB);
  sub->footer(std::string(kReportExitStatusHelp) +
              " The filters apply to both traces (--b-pid, --b-rank and --b-host replace their "
              "own in B); each must have a process that matches. Without B, A is compared "
              "with itself, so one of --b-pid, --b-rank or --b-host is needed.");
  sub->callback([options, exit_status] {
    *exit_status = run_on_trace("diff", options->a, [&](const storage::TraceReader& a) {
      const bool other_processes = options->b_pid || options->b_rank || options->b_host;
      if (!options->b && !other_processes)
        throw ReportRefusal(
            "give B, the trace to compare with A, or --b-rank, --b-pid or --b-host to compare "
            "two processes of A (`diff run.db --rank 0 --b-rank 1`)");
      const std::string path_b = options->b.value_or(options->a);
      storage::OpenFailure failure;
      const auto b = storage::TraceReader::open(path_b, &failure);
      if (!b) throw ReportRefusal(failure.message);
      ReportOptions report_b = options->report;
      if (options->b_pid) report_b.processes.pid = options->b_pid;
      if (options->b_rank) report_b.processes.rank = options->b_rank;
      if (options->b_host) report_b.processes.host = options->b_host;
      // "run.db rank 0": a side named by its trace, and by its processes where they differ.
      const std::string name_a =
          other_processes && !options->report.processes.empty()
              ? fmt::format("{} ({})", options->a, options->report.processes.describe())
              : options->a;
      const std::string name_b =
          other_processes ? fmt::format("{} ({})", path_b, report_b.processes.describe()) : path_b;
      std::string output;
      {
        const ProgressLine progress(
            fmt::format("vramtrace diff: comparing {} and {}", name_a, name_b));
        const ReportScope scope_a = resolve_scope(a, options->a, options->report);
        const ReportScope scope_b = resolve_scope(*b, path_b, report_b);
        analysis::TraceDiffOptions diff_options;
        diff_options.processes_a = scope_a.processes;
        diff_options.processes_b = scope_b.processes;
        diff_options.allocations = scope_a.allocations;
        // A kind is named by each trace's own table: both must agree on the id.
        if (scope_a.allocations.kind != scope_b.allocations.kind)
          throw ReportRefusal(fmt::format("{} and {} number kind '{}' differently", options->a,
                                          path_b, scope_a.kind_name.value_or("")));
        diff_options.level = options->report.level.value_or(analysis::MemoryLevel::kBlock);
        const analysis::TraceDiff diff = analysis::diff_traces(a, *b, diff_options);
        switch (options->report.format) {
          case OutputFormat::kCsv:
            output = trace_diff_csv(diff);
            break;
          case OutputFormat::kJson: {
            Json document = trace_diff_json(options->a, path_b, diff);
            add_filters_json(&document, scope_a);
            if (document.contains("filters") && document["filters"].contains("upids")) {
              Json& filters = document["filters"];
              filters["upids_a"] = filters["upids"];
              filters["upids_b"] =
                  scope_b.processes ? *scope_b.processes : std::set<std::int64_t>{};
              filters.erase("upids");
            }
            // B's own processes, where they are not A's.
            if (other_processes) {
              if (auto b_filters = filters_json(scope_b)) document["filters_b"] = *b_filters;
            }
            output = document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
            break;
          }
          case OutputFormat::kText:
            output = trace_diff_text(name_a, name_b, diff,
                                     other_processes ? "" : scope_a.describe(), scope_a.stacks);
            break;
        }
      }
      fmt::print("{}", output);
    });
  });
}

}  // namespace vramtrace::cli
