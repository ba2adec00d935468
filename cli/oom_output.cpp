#include "cli/oom_output.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "analysis/roles/training_phases.h"
#include "analysis/scope/process_chains.h"
#include "analysis/values/cuda_errors.h"
#include "analysis/values/live_callsite_tree.h"
#include "cli/advice_output.h"
#include "cli/csv_table.h"
#include "cli/stack_json.h"
#include "cli/trace_command.h"
#include "storage/schema.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_seconds;
using text::format_stack;

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

// The error as the failing API names it: the runtime's cudaError_t, the driver's CUresult, or
// PyTorch's allocator, which returns no code of its own.
std::string error_name(const analysis::OomRecord& oom) {
  if (oom.api == storage::api::kC10ReportOutOfMemory) return "out of memory (PyTorch's allocator)";
  const bool driver = oom.api_name.starts_with("cu") && !oom.api_name.starts_with("cuda");
  if (driver && oom.result == analysis::kOutOfMemoryResult) return "CUDA_ERROR_OUT_OF_MEMORY (2)";
  const auto name = analysis::cuda_error_name(oom.result);
  return fmt::format("{} ({})", name ? std::string(*name) : "error", oom.result);
}

Json allocator_json(const analysis::AllocatorAtOom& a) {
  Json segments = Json::array();
  for (const analysis::SegmentAtOom& s : a.segments) {
    segments.push_back({{"address", s.address},
                        {"size", s.size},
                        {"blocks", s.blocks},
                        {"free_gaps", s.free_gaps},
                        {"expandable", s.expandable}});
  }
  return {
      {"allocated", a.allocated ? Json(*a.allocated) : Json(nullptr)},
      {"reserved", a.reserved ? Json(*a.reserved) : Json(nullptr)},
      {"live_block_bytes", a.live_block_bytes},
      {"segment_bytes", a.segment_bytes},
      {"cached_bytes", a.cached_bytes},
      {"releasable_bytes", a.releasable_bytes},
      {"largest_free_gap", a.largest_free_gap},
      {"total_free", a.total_free},
      {"external_fragmentation", a.external_fragmentation},
      {"segments", std::move(segments)},
  };
}

std::string allocator_text(const analysis::AllocatorAtOom& a) {
  const auto total = [](const std::optional<std::uint64_t>& v) {
    return v ? format_bytes(*v) : std::string("unknown");
  };
  std::string text = fmt::format(
      "  allocator: allocated {}, reserved {} (its own totals)\n"
      "    live blocks {}, segments {} in {}, cached {} ({} in segments with no live block)\n",
      total(a.allocated), total(a.reserved), format_bytes(a.live_block_bytes),
      format_bytes(a.segment_bytes), count_of(a.segments.size(), "segment", "segments"),
      format_bytes(a.cached_bytes), format_bytes(a.releasable_bytes));
  if (a.total_free != 0) {
    text += fmt::format("    largest free gap {} of {} free (external fragmentation {:.2f})\n",
                        format_bytes(a.largest_free_gap), format_bytes(a.total_free),
                        a.external_fragmentation);
  }
  for (const analysis::SegmentAtOom& s : a.segments) {
    std::string gaps;
    for (const std::uint64_t gap : s.free_gaps)
      gaps += (gaps.empty() ? "" : ", ") + format_bytes(gap);
    text += fmt::format("    segment 0x{:x} {}{}: {}, free gaps: {}\n", s.address,
                        format_bytes(s.size), s.expandable ? " (expandable)" : "",
                        count_of(s.blocks, "block", "blocks"), gaps.empty() ? "none" : gaps);
  }
  return text;
}

std::string device_memory_text(const analysis::OomRecord& oom);

std::string oom_text(const analysis::OomRecord& oom, std::size_t index, std::size_t total,
                     text::StackView stacks) {
  std::string text =
      fmt::format("\nOOM {} of {}: pid {}{} at +{} (seq {}), device {}\n", index + 1, total,
                  oom.pid, oom.tid ? fmt::format(" tid {}", *oom.tid) : "",
                  format_seconds(oom.time_ns - oom.time_origin_ns), oom.seq, oom.device);
  text += fmt::format("  {} ({}) of {} failed: {}\n", oom.api_name, oom.kind_name,
                      format_bytes_exact(oom.requested_bytes), error_name(oom));
  text += device_memory_text(oom);
  text += oom.stack.empty() ? "  (no stack recorded)\n" : "  requested from:\n";
  text += format_stack(oom.stack, stacks, "    ");

  std::string kinds;
  for (const auto& [kind, bytes] : oom.live.bytes_by_kind)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, format_bytes(bytes));
  text += fmt::format("  live then{}: {} in {}{}\n",
                      oom.allocator ? " (beside the allocator's segments)" : "",
                      format_bytes_exact(oom.live.total_bytes),
                      count_of(oom.live.total_count, "allocation", "allocations"),
                      kinds.empty() ? "" : " (" + kinds + ")");
  for (const analysis::LiveGroup& group : oom.live.top) {
    text += fmt::format(
        "    {} in {}{}\n", format_bytes_exact(group.bytes),
        count_of(group.count, group.kind_name + " allocation", group.kind_name + " allocations"),
        group.stack.empty() ? " (no stack recorded)" : " from:");
    text += format_stack(group.stack, stacks, "        ");
  }
  if (oom.live.groups > oom.live.top.size())
    text +=
        fmt::format("    ... and {} more stacks (--top)\n", oom.live.groups - oom.live.top.size());
  text += oom.allocator ? allocator_text(*oom.allocator)
                        : "  no allocator events: segment level only\n";
  if (!oom.advice.empty()) text += "  advice:\n";
  text += advice_text(oom.advice, "    ");
  return text;
}

// c10's format_size: how torch's OutOfMemoryError message writes a size, so that the numbers
// read the same in both.
std::string torch_size(std::uint64_t bytes) {
  if (bytes <= 1024) return fmt::format("{} bytes", bytes);
  if (bytes <= 1024 * 1024) return fmt::format("{:.2f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes <= 1024 * 1024 * 1024)
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024 * 1024));
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024 * 1024 * 1024));
}

std::string first_line(const std::vector<storage::StackFrame>& stack) {
  const storage::StackFrame* line = analysis::first_line_of(stack);
  return line ? text::frame_where(*line) : "(no stack recorded)";
}

// A stack of autograd's own thread has no Python line: it is named by the backward() call it
// ran under.
std::string first_line(const std::vector<storage::StackFrame>& stack,
                       const std::optional<storage::StackFrame>& backward_call) {
  if (backward_call && analysis::user_python_frame(stack) == nullptr &&
      analysis::stack_facts(stack).backward)
    return text::frame_where(*backward_call) + " (its backward pass)";
  return first_line(stack);
}

bool seen_by_program(const analysis::OomRecord& oom) {
  return oom.outcome == analysis::OomOutcome::kRaised ||
         oom.outcome == analysis::OomOutcome::kReturned;
}

std::string failure_title(const analysis::OomRecord& oom) {
  const std::string who = analysis::process_label(oom.pid, oom.rank);
  const std::string when = format_seconds(oom.time_ns - oom.time_origin_ns);
  if (oom.outcome == analysis::OomOutcome::kRaised) {
    return fmt::format("torch.OutOfMemoryError in {} at +{}, device {}: tried to allocate {}", who,
                       when, oom.device, torch_size(oom.requested_bytes));
  }
  return fmt::format("{} of {} failed in {} at +{}, device {}: {}", oom.api_name,
                     format_bytes_exact(oom.requested_bytes), who, when, oom.device,
                     error_name(oom));
}

// What was live by the line that made it: the groups (stack, kind) the report kept, merged by
// their first line, largest first.
std::string live_by_line(const analysis::OomRecord& oom) {
  struct Line {
    std::string where, kind;
    std::uint64_t bytes = 0, count = 0;
    std::string role;
  };
  std::vector<Line> lines;
  for (const analysis::LiveGroup& group : oom.live.top) {
    const std::string where = first_line(group.stack, oom.backward_call);
    std::string role;
    if (group.role) {
      role = analysis::block_role_name(*group.role);
      std::replace(role.begin(), role.end(), '_', ' ');
    }
    auto found = std::find_if(lines.begin(), lines.end(), [&](const Line& line) {
      return line.where == where && line.kind == group.kind_name && line.role == role;
    });
    if (found == lines.end())
      found = lines.insert(lines.end(), {where, group.kind_name, 0, 0, role});
    found->bytes += group.bytes;
    found->count += group.count;
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.bytes > b.bytes; });
  std::string text = fmt::format(
      "  live then, by line: {} in {}{}\n", format_bytes(oom.live.total_bytes),
      count_of(oom.live.total_count, "allocation", "allocations"),
      oom.live.groups > oom.live.top.size()
          ? fmt::format(" (the {} largest stacks of {})", oom.live.top.size(), oom.live.groups)
          : "");
  for (const Line& line : lines) {
    text += fmt::format("    {:>10} in {:<24} {:<16} {}\n", format_bytes(line.bytes),
                        count_of(line.count, line.kind + " allocation", line.kind + " allocations"),
                        line.role.empty() ? "-" : line.role, line.where);
  }
  return text;
}

std::string allocator_brief(const analysis::OomRecord& oom) {
  if (!oom.allocator) return "";
  const analysis::AllocatorAtOom& a = *oom.allocator;
  std::string text;
  if (oom.outcome == analysis::OomOutcome::kRaised && a.allocated && a.reserved) {
    // As torch's message puts it: "Of the allocated memory X is allocated by PyTorch, and Y is
    // reserved by PyTorch but unallocated."
    text += fmt::format("  PyTorch then: {} allocated, {} reserved but unallocated ({} reserved)\n",
                        torch_size(*a.allocated),
                        torch_size(*a.reserved - std::min(*a.reserved, *a.allocated)),
                        torch_size(*a.reserved));
  }
  text +=
      fmt::format("  allocator: {} in {}, {} free in them; largest free gap {}",
                  format_bytes(a.segment_bytes), count_of(a.segments.size(), "segment", "segments"),
                  format_bytes(a.total_free), format_bytes(a.largest_free_gap));
  if (a.total_free != 0)
    text += fmt::format(" (external fragmentation {:.2f})", a.external_fragmentation);
  return text + "\n";
}

// As torch's message starts: "GPU 0 has a total capacity of X of which Y is free."
std::string device_memory_text(const analysis::OomRecord& oom) {
  if (!oom.device_memory) return "";
  return fmt::format("  device {} then: {} total capacity, {} free\n", oom.device,
                     torch_size(oom.device_memory->total), torch_size(oom.device_memory->free));
}

// A failure inside PyTorch's allocator, in a line.
std::string inside_allocator(const analysis::OomRecord& oom) {
  return fmt::format("{} of {} at +{}", oom.api_name, format_bytes(oom.requested_bytes),
                     format_seconds(oom.time_ns - oom.time_origin_ns));
}

}  // namespace

std::string oom_brief_text(const std::string& trace_path,
                           const std::vector<analysis::OomRecord>& ooms, const std::string& scope) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (ooms.empty()) return fmt::format("vramtrace: no out-of-memory in {}\n", where);
  std::size_t seen = 0, raised = 0;
  for (const analysis::OomRecord& oom : ooms) {
    seen += seen_by_program(oom);
    raised += oom.outcome == analysis::OomOutcome::kRaised;
  }
  const std::size_t inside = ooms.size() - seen;
  std::string text = fmt::format(
      "vramtrace: {} in {}",
      count_of(seen, "out-of-memory error the program saw", "out-of-memory errors the program saw"),
      where);
  if (raised != 0) text += fmt::format(" ({} torch.OutOfMemoryError)", raised);
  if (inside != 0)
    text += fmt::format(", and {} inside PyTorch's allocator",
                        count_of(inside, "failed device allocation", "failed device allocations"));
  text += "\n";
  for (std::size_t i = 0; i < ooms.size(); ++i) {
    const analysis::OomRecord& oom = ooms[i];
    if (!seen_by_program(oom)) continue;
    text += "\n" + failure_title(oom) + "\n";
    text += "  at " + first_line(oom.stack, oom.backward_call) + "\n";
    text += device_memory_text(oom);
    text += allocator_brief(oom);
    text += live_by_line(oom);
    if (!oom.advice.empty()) text += "  advice:\n" + advice_text(oom.advice, "    ");
    std::vector<std::string> tries;
    for (const analysis::OomRecord& other : ooms)
      if (other.raised == i) tries.push_back(inside_allocator(other));
    if (!tries.empty()) {
      text += fmt::format(
          "  before it: {} failed inside PyTorch's allocator, which freed its "
          "cache and tried again, in vain\n",
          fmt::join(tries, ", "));
    }
  }
  std::vector<const analysis::OomRecord*> recovered;
  for (const analysis::OomRecord& oom : ooms)
    if (oom.outcome == analysis::OomOutcome::kRecovered) recovered.push_back(&oom);
  if (!recovered.empty()) {
    text += fmt::format(
        "\n{} the program did not see (PyTorch's allocator freed its cache and "
        "went on):\n",
        count_of(recovered.size(), "failure", "failures"));
    for (const analysis::OomRecord* oom : recovered)
      text += fmt::format("  {} from {}\n", inside_allocator(*oom), first_line(oom->stack));
  }
  text += fmt::format(
      "\nmore: vramtrace oom {} --all (every failure, with whole stacks and the "
      "allocator's segments)\n",
      trace_path);
  return text;
}

Json oom_report_json(const std::string& trace_path, const std::vector<analysis::OomRecord>& ooms) {
  Json records = Json::array();
  for (const analysis::OomRecord& oom : ooms) {
    Json top = Json::array();
    for (const analysis::LiveGroup& group : oom.live.top) {
      top.push_back(
          {{"kind", group.kind_name},
           {"role", group.role ? Json(analysis::block_role_name(*group.role)) : Json(nullptr)},
           {"bytes", group.bytes},
           {"count", group.count},
           {"stack", stack_json(group.stack)}});
    }
    records.push_back({
        {"outcome", analysis::oom_outcome_name(oom.outcome)},
        {"upid", oom.upid},
        {"pid", oom.pid},
        {"tid", oom.tid ? Json(*oom.tid) : Json(nullptr)},
        {"time_ns", oom.time_ns},
        {"seq", oom.seq},
        {"device", oom.device},
        {"api", oom.api_name},
        {"kind", oom.kind_name},
        {"requested_bytes", oom.requested_bytes},
        {"result", oom.result},
        {"device_memory", oom.device_memory ? Json{{"free", oom.device_memory->free},
                                                   {"total", oom.device_memory->total}}
                                            : Json(nullptr)},
        {"stack", stack_json(oom.stack)},
        {"live",
         {{"total_bytes", oom.live.total_bytes},
          {"total_count", oom.live.total_count},
          {"by_kind", oom.live.bytes_by_kind},
          {"top", std::move(top)}}},
        {"allocator", oom.allocator ? allocator_json(*oom.allocator) : Json(nullptr)},
        {"advice", advice_json(oom.advice)},
    });
  }
  return {{"trace", trace_path}, {"ooms", std::move(records)}};
}

std::string oom_report_text(const std::string& trace_path,
                            const std::vector<analysis::OomRecord>& ooms, const std::string& scope,
                            text::StackView stacks) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (ooms.empty()) return fmt::format("vramtrace: no out-of-memory in {}\n", where);
  std::string text =
      fmt::format("vramtrace: {} in {}\n",
                  count_of(ooms.size(), "out-of-memory failure", "out-of-memory failures"), where);
  for (std::size_t i = 0; i < ooms.size(); ++i) text += oom_text(ooms[i], i, ooms.size(), stacks);
  return text;
}

std::string oom_report_csv(const std::vector<analysis::OomRecord>& ooms) {
  CsvTable table({"upid", "pid", "seq", "time_ns", "device", "api", "kind", "requested_bytes",
                  "result", "live_bytes", "live_count", "function", "file", "line", "advice"});
  for (const analysis::OomRecord& oom : ooms) {
    std::vector<std::string> fields{csv_number(oom.upid),
                                    csv_number(oom.pid),
                                    csv_number(oom.seq),
                                    csv_number(oom.time_ns),
                                    csv_number(oom.device),
                                    oom.api_name,
                                    oom.kind_name,
                                    csv_number(oom.requested_bytes),
                                    csv_number(oom.result),
                                    csv_number(oom.live.total_bytes),
                                    csv_number(oom.live.total_count)};
    for (std::string& field : csv_frame_fields(oom.stack)) fields.push_back(std::move(field));
    std::string ids;
    for (const analysis::Advice& advice : oom.advice) ids += (ids.empty() ? "" : ";") + advice.id;
    fields.push_back(ids);
    table.row(fields);
  }
  return table.text();
}

}  // namespace vramtrace::cli
