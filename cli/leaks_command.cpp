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
#include "cli/output_format.h"
#include "cli/stack_json.h"
#include "cli/time_query.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_stack;

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

Json libraries_json(const std::vector<analysis::LibraryMemory>& held) {
  Json out = Json::array();
  for (const analysis::LibraryMemory& library : held) {
    out.push_back(
        {{"library", library.library}, {"bytes", library.bytes}, {"count", library.count}});
  }
  return out;
}

// "held by CUDA libraries for themselves (not leaks): 128.3 MiB in 12 allocations
// (libcublas.so.13 128.3 MiB)"
std::string libraries_line(const std::vector<analysis::LibraryMemory>& held) {
  if (held.empty()) return {};
  std::uint64_t bytes = 0, count = 0;
  std::vector<std::string> each;
  for (const analysis::LibraryMemory& library : held) {
    bytes += library.bytes;
    count += library.count;
    each.push_back(fmt::format("{} {}", library.library, format_bytes(library.bytes)));
  }
  return fmt::format("held by CUDA libraries for themselves (not leaks): {} in {} ({})\n",
                     format_bytes_exact(bytes), count_of(count, "allocation", "allocations"),
                     fmt::join(each, ", "));
}

}  // namespace

Json leak_report_json(const std::string& trace_path, const analysis::LeakReport& report) {
  Json leaks = Json::array();
  for (const analysis::LeakGroup& group : report.groups) {
    Json stack = stack_json(group.stack);
    Json entry = {
        {"kind", group.kind_name},   {"bytes", group.bytes}, {"count", group.count},
        {"stack", std::move(stack)}, {"level", group.level},
    };
    // Ranks kept apart: each group's process.
    if (group.upid) {
      entry["upid"] = *group.upid;
      entry["pid"] = group.pid;
      entry["rank"] = group.rank ? Json(*group.rank) : Json(nullptr);
    }
    leaks.push_back(std::move(entry));
  }
  return {
      {"trace", trace_path},
      {"total_bytes", report.total_bytes},
      {"total_count", report.total_count},
      {"leaks", std::move(leaks)},
      {"level", report.level},
      {"allocator_events", report.allocator_events},
      {"cached", {{"bytes", report.cached.bytes}, {"count", report.cached.count}}},
      {"held_by_libraries", libraries_json(report.held_by_libraries)},
      {"expandable_segments",
       {{"reserved_bytes", report.expandable_segments.reserved_bytes},
        {"reservations", report.expandable_segments.reservations},
        {"handles", report.expandable_segments.handles}}},
      {"incomplete", !report.trace_complete},
      {"warnings", report.warnings},
      {"ended_at_python_finalizing", report.ended_at_python_finalizing},
  };
}

std::string leak_report_text(const std::string& trace_path, const analysis::LeakReport& report,
                             const std::string& scope, text::StackView stacks) {
  std::string text;
  for (const std::string& warning : report.warnings) text += fmt::format("warning: {}\n", warning);
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  std::string cache;
  if (report.level == "block" && report.cached.count != 0) {
    cache = fmt::format("cached by the allocator (not leaks): {} in {}\n",
                        format_bytes_exact(report.cached.bytes),
                        count_of(report.cached.count, "segment", "segments"));
  } else if (report.level == "segment" && !report.allocator_events) {
    cache = "no allocator events: reported at the segment level only\n";
  }
  cache += libraries_line(report.held_by_libraries);
  if (const auto& parts = report.expandable_segments; parts.reservations + parts.handles != 0) {
    cache += fmt::format(
        "held by the allocator's expandable segments (not leaks): {} of address space in {}, "
        "and {} whose memory its mappings count\n",
        format_bytes_exact(parts.reserved_bytes),
        count_of(parts.reservations, "reservation", "reservations"),
        count_of(parts.handles, "physical handle", "physical handles"));
  }
  if (!report.ended_at_python_finalizing.empty()) {
    cache += fmt::format(
        "Python: counted when the interpreter began to finalize ({}): what its teardown "
        "freed was still held by the program\n",
        count_of(report.ended_at_python_finalizing.size(), "process", "processes"));
  }
  if (report.groups.empty()) {
    return text +
           fmt::format(
               "vramtrace: no leaks in {} ({} level): every successful allocation was "
               "freed\n",
               where, report.level) +
           cache;
  }
  text += fmt::format("vramtrace: {} leaked in {} from {} in {} ({} level)\n",
                      format_bytes_exact(report.total_bytes),
                      count_of(report.total_count, "allocation", "allocations"),
                      count_of(report.groups.size(), "stack", "stacks"), where, report.level);
  text += cache;
  for (const analysis::LeakGroup& group : report.groups) {
    text += fmt::format(
        "\n{} in {}", format_bytes_exact(group.bytes),
        count_of(group.count, group.kind_name + " allocation", group.kind_name + " allocations"));
    if (group.upid) text += " in " + analysis::process_label(group.pid, group.rank);
    text += group.stack.empty() ? " (no stack recorded)\n" : " from:\n";
    text += format_stack(group.stack, stacks, "    ");
  }
  return text;
}

std::string leak_report_csv(const analysis::LeakReport& report) {
  CsvTable table({"kind", "level", "bytes", "count", "function", "file", "line", "stack"});
  for (const analysis::LeakGroup& group : report.groups) {
    std::vector<std::string> fields{group.kind_name, group.level, csv_number(group.bytes),
                                    csv_number(group.count)};
    for (std::string& field : csv_frame_fields(group.stack)) fields.push_back(std::move(field));
    fields.push_back(csv_stack(group.stack));
    table.row(fields);
  }
  return table.text();
}

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

// A moment needs the time index. The end is the whole-trace scan for a trace that cannot keep
// one (analysis/time/report_time_index.h), the index otherwise (it answers without reading every
// allocation).
analysis::LeakReport leak_report(const storage::TraceReader& trace, const ReportScope& scope,
                                 const LeaksWhen& when) {
  const analysis::LeakReportOptions options = options_for(scope, when);
  const bool moment = !when.at.empty() || !when.between.empty();
  const std::unique_ptr<storage::TimeIndex> time_index =
      moment ? analysis::open_time_index(trace) : analysis::open_time_index_if_kept(trace);
  if (!time_index) return analysis::build_leak_report(trace, options);
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

Json leak_growth_json(const std::string& trace_path, const analysis::LeakGrowth& growth) {
  Json processes = Json::array();
  for (const analysis::ProcessIterations& process : growth.processes) {
    processes.push_back({{"upid", process.upid},
                         {"pid", process.pid},
                         {"iterations", process.iterations},
                         {"found_by", process.marker.empty() ? "backward_passes" : "marker"},
                         {"marker", process.marker.empty() ? Json(nullptr) : Json(process.marker)},
                         {"sampled", process.sampled},
                         {"sampled_seq", process.sampled_seq}});
  }
  Json growing = Json::array();
  for (const analysis::GrowingGroup& entry : growth.growing) {
    growing.push_back({{"upid", entry.upid},
                       {"pid", entry.pid},
                       {"kind", entry.group.kind_name},
                       {"level", entry.group.level},
                       {"bytes_per_iteration", entry.bytes_per_iteration},
                       {"counts", entry.counts},
                       {"kept", entry.kept()},
                       {"bytes", entry.bytes},
                       {"count", entry.group.count},
                       {"stack", stack_json(entry.group.stack)}});
  }
  return {{"trace", trace_path},
          {"marker", growth.marker.empty() ? Json(nullptr) : Json(growth.marker)},
          {"level", growth.level},
          {"processes", std::move(processes)},
          {"growing", std::move(growing)}};
}

namespace {

// "'iter'" where a marker was named, else "iteration".
std::string iteration_word(const analysis::LeakGrowth& growth) {
  return growth.marker.empty() ? "iteration" : "'" + growth.marker + "'";
}

}  // namespace

std::string leak_growth_text(const std::string& trace_path, const analysis::LeakGrowth& growth,
                             const std::string& scope, text::StackView stacks) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  std::string text;
  for (const analysis::ProcessIterations& process : growth.processes) {
    text += fmt::format("pid {}: {}, {} looked at\n", process.pid,
                        analysis::describe_iterations(process), process.sampled.size());
  }
  if (growth.growing.empty()) {
    return text + fmt::format("vramtrace: nothing grows from one {} to the next in {} ({} level)\n",
                              iteration_word(growth), where, growth.level);
  }
  text += fmt::format("vramtrace: {} from one {} to the next in {} ({} level)\n",
                      count_of(growth.growing.size(), "stack grows", "stacks grow"),
                      iteration_word(growth), where, growth.level);
  for (const analysis::GrowingGroup& entry : growth.growing) {
    const std::string unit = entry.group.kind_name + " allocation";
    text +=
        fmt::format("\n+{} per iteration in pid {}, {}: {} at the last looked at, {}, from:\n",
                    format_bytes(static_cast<std::uint64_t>(entry.bytes_per_iteration + 0.5)),
                    entry.pid, entry.group.kind_name, format_bytes(entry.bytes.back()),
                    entry.kept() ? fmt::format("kept: {} where the first looked at had {}",
                                               count_of(entry.counts.back(), unit, unit + "s"),
                                               entry.counts.front())
                                 : fmt::format("the same {}, larger each iteration (nothing kept)",
                                               count_of(entry.counts.back(), unit, unit + "s")));
    if (entry.group.stack.empty()) text += "    (no stack recorded)\n";
    text += format_stack(entry.group.stack, stacks, "    ");
  }
  return text;
}

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
