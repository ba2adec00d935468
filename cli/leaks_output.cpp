#include "cli/leaks_output.h"

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

}  // namespace vramtrace::cli
