#include "cli/export_command.h"

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/export/chrome_export.h"
#include "analysis/export/memory_viz_export.h"
#include "analysis/export/perfetto_export.h"
#include "analysis/time/moment.h"
#include "cli/exit_status.h"
#include "cli/output_file.h"
#include "cli/progress_line.h"
#include "cli/report_scope.h"
#include "cli/trace_command.h"

namespace vramtrace::cli {
namespace {

struct Options {
  std::string trace;
  std::optional<std::string> perfetto, chrome, memory_viz;
  bool force = false;
  bool no_allocation_events = false;
  ReportOptions scope;
};

// Writes one file with `write` (output_file.h): never over the trace, never half written. An
// existing file is refused without --force.
void write_file(const std::string& trace, const std::string& path, bool force,
                const std::function<void(std::ostream&)>& write) {
  if (const std::string refusal = output_refusal(path, {trace}, force); !refusal.empty())
    throw ReportRefusal(refusal);
  write_output_file(path, write);
}

std::string contents(const analysis::ExportCounts& counts) {
  return fmt::format("{} processes, {} counters, {} ranges, {} instants", counts.processes,
                     counts.counters, counts.slices, counts.instants);
}

std::string contents(const analysis::MemoryVizSnapshot& snapshot, std::size_t entries) {
  return fmt::format("pid {} at seq {}: {} segments, {} active blocks, {} trace entries",
                     snapshot.at.pid, snapshot.at.seq, snapshot.segments.size(),
                     snapshot.active_blocks(), entries);
}

// The Perfetto and Chrome files: each reads the trace once, as it writes.
std::string write_timelines(const storage::TraceReader& trace, const Options& options,
                            const ReportScope& scope) {
  analysis::ExportOptions export_options;
  export_options.processes = scope.processes;
  export_options.allocations = scope.allocations;
  export_options.level = scope.level.value_or(analysis::MemoryLevel::kBlock);
  export_options.allocation_instants = !options.no_allocation_events;
  std::string said;
  analysis::ExportCounts counts;
  if (options.perfetto) {
    write_file(options.trace, *options.perfetto, options.force, [&](std::ostream& out) {
      counts = analysis::write_perfetto_trace(trace, export_options, out);
    });
    said += fmt::format("vramtrace export: wrote {} (Perfetto trace: {})\n", *options.perfetto,
                        contents(counts));
  }
  if (options.chrome) {
    write_file(options.trace, *options.chrome, options.force, [&](std::ostream& out) {
      counts = analysis::write_chrome_trace(trace, export_options, out);
    });
    said += fmt::format("vramtrace export: wrote {} (Chrome trace events: {})\n", *options.chrome,
                        contents(counts));
  }
  return said;
}

// The process is chosen before the file is opened, so that a refusal leaves no file behind.
std::string write_memory_viz(const storage::TraceReader& trace, const Options& options,
                             const ReportScope& scope) {
  const std::string& path = *options.memory_viz;
  analysis::MemoryVizOptions memory_viz_options;
  memory_viz_options.processes = scope.processes;
  memory_viz_options.device = scope.allocations.device;
  analysis::MemoryVizSnapshot snapshot;
  try {
    snapshot = analysis::build_memory_viz(trace, memory_viz_options);
  } catch (const analysis::BadMoment& several) {
    throw ReportRefusal(several.what());
  }
  std::size_t entries = 0;
  write_file(options.trace, path, options.force, [&](std::ostream& out) {
    entries = analysis::write_memory_viz(trace, snapshot, out);
  });
  return fmt::format("vramtrace export: wrote {} (PyTorch memory snapshot: {})\n", path,
                     contents(snapshot, entries));
}

}  // namespace

void register_export_command(CLI::App& app, int* exit_status) {
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write the trace as a timeline for Perfetto (ui.perfetto.dev) or chrome://tracing, or one "
      "process as a PyTorch memory snapshot (pytorch.org/memory_viz)");
  sub->add_option("FILE", options->trace, "The trace, as written by 'vramtrace run -o FILE'")
      ->required();
  sub->add_option("--perfetto", options->perfetto,
                  "Write a Perfetto protobuf trace (TracePackets) to this file");
  sub->add_option("--chrome", options->chrome, "Write Chrome trace event JSON to this file");
  sub->add_option("--memory-viz", options->memory_viz,
                  "Write one process's allocator state at its end, and its allocator events, as "
                  "the pickle of torch.cuda.memory._dump_snapshot() (pytorch.org/memory_viz, "
                  "python -m torch.cuda._memory_viz); choose the process with --pid, --rank or "
                  "--host when several recorded allocator blocks");
  sub->add_flag("--force", options->force, "Replace output files that exist");
  sub->add_flag("--no-allocation-events", options->no_allocation_events,
                "Leave out the instant per allocation and free (counters, ranges and OOMs stay): "
                "for traces too large for a viewer");
  add_scope_options(sub, &options->scope);
  sub->footer(
      "Exit status: 0 when every file asked for was written; 2 for a usage error (no --perfetto, "
      "--chrome or --memory-viz, an output that exists without --force, --memory-viz with "
      "several processes that recorded allocator blocks and no filter to choose one, or with "
      "--kind or --level), a filter that matches no process, a trace that cannot be read, or a "
      "file that cannot be written (one line on stderr says why).");
  sub->callback([options, exit_status] {
    *exit_status = run_on_trace("export", options->trace, [&](const storage::TraceReader& trace) {
      if (!options->perfetto && !options->chrome && !options->memory_viz)
        throw ReportRefusal(
            "nothing to write: give --perfetto OUT, --chrome OUT.json, --memory-viz OUT.pickle, or "
            "several");
      // The memory snapshot is the allocator's view, as `frag`'s map is: --kind and --level,
      // which pick allocations for the timeline, would leave blocks without their segments.
      if (options->memory_viz && (options->scope.kind || options->scope.level))
        throw ReportRefusal(
            "--memory-viz takes no --kind or --level: the snapshot is the allocator's view");
      // Every output is checked before any is written: a refusal leaves nothing behind.
      std::vector<std::string> outputs;
      for (const auto* output : {&options->perfetto, &options->chrome, &options->memory_viz})
        if (*output) outputs.push_back(**output);
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::string refusal = output_refusal(outputs[i], {options->trace}, options->force);
        if (!refusal.empty()) throw ReportRefusal(refusal);
        for (std::size_t j = i + 1; j < outputs.size(); ++j)
          if (const std::string same = same_output_twice(outputs[i], outputs[j]); !same.empty())
            throw ReportRefusal(same);
      }
      std::string said;
      {
        const ProgressLine progress(fmt::format("vramtrace export: reading {}", options->trace));
        const ReportScope scope = resolve_scope(trace, options->trace, options->scope);
        if (options->perfetto || options->chrome) said += write_timelines(trace, *options, scope);
        if (options->memory_viz) said += write_memory_viz(trace, *options, scope);
      }
      fmt::print("{}", said);
    });
  });
}

}  // namespace vramtrace::cli
