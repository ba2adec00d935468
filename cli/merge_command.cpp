#include "cli/merge_command.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "cli/output_file.h"
#include "storage/trace_merge.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;

namespace {

constexpr std::string_view kMergeExitStatusHelp =
    "Exit status: 0 when the merged trace was written; 2 for a usage error, a trace that cannot "
    "be read, or an output that exists (without --force) or cannot be written (one line on "
    "stderr says why; no output file is left behind).";

// Shows "merged 3 of 40 traces" on a terminal, once a merge has taken more than a second: a
// short merge says nothing, and a log file gets no carriage returns.
class MergeProgress {
 public:
  MergeProgress() : on_terminal_(isatty(STDERR_FILENO) == 1) {}
  ~MergeProgress() {
    if (shown_) fmt::print(stderr, "\n");
  }
  MergeProgress(const MergeProgress&) = delete;
  MergeProgress& operator=(const MergeProgress&) = delete;

  void update(std::size_t merged, std::size_t total) {
    if (!on_terminal_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) {
      return;
    }
    shown_ = true;
    fmt::print(stderr, "\rvramtrace merge: merged {} of {}", merged,
               count_of(total, "trace", "traces"));
    std::fflush(stderr);
  }

 private:
  bool on_terminal_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct MergeCommandOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
};

int run_merge(const MergeCommandOptions& options) {
  // The merged trace is renamed over the output only once whole, but never over an input: the
  // input would be gone, whatever the merge holds.
  if (const std::string refusal = output_refusal(options.output, options.inputs, /*replace=*/true);
      !refusal.empty()) {
    fmt::print(stderr, "vramtrace merge: {}\n", refusal);
    return kExitUsageOrTraceError;
  }
  const std::vector<std::filesystem::path> inputs(options.inputs.begin(), options.inputs.end());
  storage::MergeResult result;
  {
    MergeProgress progress;
    storage::MergeOptions merge_options;
    merge_options.replace_existing = options.force;
    merge_options.progress = [&](std::size_t merged, std::size_t total) {
      progress.update(merged, total);
    };
    result = storage::merge_traces(inputs, options.output, merge_options);
  }
  if (!result.ok) {
    fmt::print(stderr, "vramtrace merge: {}\n", result.error);
    return kExitUsageOrTraceError;
  }
  for (const std::string& warning : result.warnings) {
    fmt::print(stderr, "vramtrace merge: warning: {}\n", warning);
  }
  fmt::print("vramtrace merge: {} ({}) merged into {}\n",
             count_of(inputs.size(), "trace", "traces"),
             count_of(result.processes, "process", "processes"), options.output);
  return kExitOk;
}

}  // namespace

void register_merge_command(CLI::App& app, int* exit_status) {
  auto options = std::make_shared<MergeCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "merge",
      "Merge the traces of one job, recorded on several nodes, into one trace: every process, "
      "allocation and marker, with shared stacks stored once; hosts and ranks as recorded");
  sub->add_option("TRACE", options->inputs, "The traces to merge, as written by 'vramtrace run'")
      ->required();
  sub->add_option("-o,--output", options->output, "The merged trace to write")->required();
  sub->add_flag("--force", options->force, "Replace the output file if it exists");
  sub->footer(std::string(kMergeExitStatusHelp));
  sub->callback([options, exit_status] { *exit_status = run_merge(*options); });
}

}  // namespace vramtrace::cli
