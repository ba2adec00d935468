#include "cli/run_digest_text.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <vector>

#include "analysis/scope/process_chains.h"
#include "analysis/values/live_callsite_tree.h"
#include "text/stack_text.h"
#include "text/text_style.h"

namespace vramtrace::cli {
namespace {

using text::count_of;
using text::format_bytes;

// Enough for a job's ranks on one node; the summary lists them all.
constexpr std::size_t kProcessesShown = 8;

// "held at its end: 2.0 MiB parameters, 2.0 MiB gradients, ...": the roles that hold bytes.
std::string held_by_role(const analysis::RoleTotals& held) {
  std::vector<std::string> roles;
  for (std::size_t r = 0; r < analysis::kBlockRoles; ++r) {
    if (held.bytes[r] == 0) continue;
    std::string name(analysis::block_role_name(static_cast<analysis::BlockRole>(r)));
    if (name == "optimizer_state")
      name = "optimizer state";
    else if (name != "unknown")
      name += "s";
    roles.push_back(fmt::format("{} {}", format_bytes(held.bytes[r]), name));
  }
  if (roles.empty()) return "held nothing at its end";
  return fmt::format("held at its end: {}", fmt::join(roles, ", "));
}

// A training process: a leak is what grows from one iteration to the next, and comes first.
void training_parts(const analysis::ProcessDigest& p, bool whole, std::vector<std::string>* parts) {
  const std::string iterations =
      p.iteration_marker.empty()
          ? count_of(p.iterations, "iteration", "iterations")
          : fmt::format("{} of '{}'", count_of(p.iterations, "iteration", "iterations"),
                        p.iteration_marker);
  if (p.growth_per_iteration > 0) {
    const auto per_iteration = [](double bytes) {
      return format_bytes(static_cast<std::uint64_t>(bytes + 0.5)) + " per iteration";
    };
    std::string leak = "LEAKS " + per_iteration(p.growth_per_iteration);
    if (const storage::StackFrame* line = analysis::first_line_of(p.top_growth_stack)) {
      leak += p.top_growth_per_iteration < p.growth_per_iteration
                  ? fmt::format(", most ({}) at {}", per_iteration(p.top_growth_per_iteration),
                                text::frame_where(*line))
                  : fmt::format(" at {}", text::frame_where(*line));
    }
    const std::string unit = p.allocator_events ? "block" : "allocation";
    leak += fmt::format(" ({} in {} at its end, {})", format_bytes(p.leaked_bytes),
                        count_of(p.leaked_count, unit, unit + "s"), iterations);
    parts->insert(parts->begin(), std::move(leak));
  } else {
    parts->push_back(fmt::format(
        "{} over {}", whole ? "nothing leaked" : "no leak in what was recorded", iterations));
  }
  if (p.larger_per_iteration > 0) {
    // Memory that grows with nothing kept: the same tensors remade larger (a growing batch).
    const std::string unit = p.allocator_events ? "block" : "allocation";
    std::string larger =
        fmt::format("GROWS {} per iteration",
                    format_bytes(static_cast<std::uint64_t>(p.larger_per_iteration + 0.5)));
    if (const storage::StackFrame* line = analysis::first_line_of(p.top_larger_stack))
      larger += " at " + text::frame_where(*line);
    larger += fmt::format(" (the same {}, larger each iteration: nothing kept)",
                          count_of(p.top_larger_count, unit, unit + "s"));
    parts->insert(parts->begin() + (p.growth_per_iteration > 0 ? 1 : 0), std::move(larger));
  }
  if (p.held) parts->push_back(held_by_role(*p.held));
}

std::string process_line(const analysis::ProcessDigest& p) {
  std::vector<std::string> parts;
  if (p.peak_device) {
    std::string peak =
        fmt::format("peak {} on device {}", format_bytes(p.peak_bytes), *p.peak_device);
    if (p.allocator_events)
      peak += fmt::format(" ({} in blocks)", format_bytes(p.peak_block_bytes));
    parts.push_back(std::move(peak));
  }
  const bool whole = p.process.end.complete;
  if (!whole) parts.emplace_back("NOT recorded to its end");
  if (p.iterations != 0) {
    training_parts(p, whole, &parts);
  } else if (p.leaked_count == 0) {
    parts.emplace_back(whole ? "nothing leaked" : "no leak in what was recorded");
  } else {
    const std::string unit = p.allocator_events ? "block" : "allocation";
    std::string leak = fmt::format("leaked {} in {} at its end", format_bytes(p.leaked_bytes),
                                   count_of(p.leaked_count, unit, unit + "s"));
    if (const storage::StackFrame* line = analysis::first_line_of(p.top_leak_stack))
      leak += fmt::format(", most ({}) from {}", format_bytes(p.top_leak_bytes),
                          text::frame_where(*line));
    parts.push_back(std::move(leak));
  }
  if (p.library_bytes != 0) {
    parts.push_back(fmt::format("{} held by {} for {} (not a leak)", format_bytes(p.library_bytes),
                                fmt::join(p.libraries, ", "),
                                p.libraries.size() == 1 ? "itself" : "themselves"));
  }
  if (p.torch_out_of_memory != 0) {
    std::string raised = count_of(p.torch_out_of_memory, "torch.OutOfMemoryError raised",
                                  "torch.OutOfMemoryErrors raised");
    if (p.out_of_memory > p.torch_out_of_memory)
      raised += fmt::format(" ({} in all)", count_of(p.out_of_memory, "out-of-memory failure",
                                                     "out-of-memory failures"));
    parts.push_back(std::move(raised));
  } else if (p.out_of_memory != 0) {
    parts.push_back(count_of(p.out_of_memory, "out-of-memory failure", "out-of-memory failures"));
  }
  // A distributed job's process is named by its rank first, as people name them.
  const std::string who = analysis::process_label(p.process.start.pid, p.process.start.rank);
  return fmt::format("{} {}: {}", who, analysis::image_name(p.process), fmt::join(parts, "; "));
}

// The path as a shell reads it back: quoted where it holds anything but the usual characters.
std::string shell_word(const std::string& path) {
  const bool plain = !path.empty() && path.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./-+:=,@%") == std::string::npos;
  if (plain) return path;
  std::string quoted = "'";
  for (const char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string run_digest_text(const std::string& trace_path, std::int64_t allocations,
                            const analysis::RunDigest& digest) {
  std::string text = fmt::format(
      "vramtrace: recorded {} in {}",
      count_of(static_cast<std::uint64_t>(allocations), "allocation", "allocations"), trace_path);
  std::string gaps;
  for (const std::string& gap : digest.gaps) gaps += "vramtrace: warning: " + gap + "\n";
  if (digest.gpu.empty()) {
    return text +
           fmt::format("; no process used the GPU ({} ran)\n",
                       count_of(digest.processes, "process", "processes")) +
           gaps;
  }
  if (digest.processes > 1) {
    text += fmt::format("; {} of {} used the GPU", digest.gpu.size(),
                        count_of(digest.processes, "process", "processes"));
  }
  text += "\n";
  bool leaked = false, growing = false, out_of_memory = false;
  for (std::size_t i = 0; i < digest.gpu.size(); ++i) {
    const analysis::ProcessDigest& p = digest.gpu[i];
    if (p.iterations != 0)
      growing = growing || p.growth_per_iteration > 0;
    else
      leaked = leaked || p.leaked_count != 0;
    out_of_memory = out_of_memory || p.out_of_memory != 0;
    if (i < kProcessesShown) text += "vramtrace:   " + process_line(p) + "\n";
  }
  if (digest.gpu.size() > kProcessesShown)
    text += fmt::format("vramtrace:   ... and {} more (vramtrace summary)\n",
                        digest.gpu.size() - kProcessesShown);
  // Last before the commands, where a job's log is read from its end: a leak in what was not
  // recorded would be missing from every line above.
  text += gaps;
  const std::string file = shell_word(trace_path);
  std::vector<std::string> more;
  if (growing) more.push_back("vramtrace leaks " + file + " --growth");
  if (leaked) more.push_back("vramtrace leaks " + file);
  if (out_of_memory) more.push_back("vramtrace oom " + file);
  more.push_back("vramtrace summary " + file);
  return text + fmt::format("vramtrace: more: {}\n", fmt::join(more, ", "));
}

}  // namespace vramtrace::cli
