// `vramtrace`: record a program's GPU allocations (`run`), report on the trace (`summary`,
// `leaks`, `oom`, `timeline`, `peak`, `frag`), compare two traces (`diff`), export it for
// timeline viewers (`export`), judge it in CI (`gate`), and merge the traces of several nodes
// (`merge`).
// Each subcommand lives in its own file; this one only wires them up and maps every parse failure
// to exit status 2 with one line on stderr.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <string>
#include <vector>

#include "cli/diff_command.h"
#include "cli/exit_status.h"
#include "cli/export_command.h"
#include "cli/frag_command.h"
#include "cli/gate_command.h"
#include "cli/leaks_command.h"
#include "cli/merge_command.h"
#include "cli/oom_command.h"
#include "cli/peak_command.h"
#include "cli/roles_command.h"
#include "cli/run_command.h"
#include "cli/summary_command.h"
#include "cli/timeline_command.h"

namespace {

// "vramtrace leaks: FILE is required (see 'vramtrace leaks --help')": one line, pointing at the
// help of the subcommand that was being parsed, if any.
std::string one_line_failure(const CLI::App* app, const CLI::Error& error) {
  std::string command = "vramtrace";
  const std::vector<CLI::App*> chosen = app->get_subcommands();
  if (!chosen.empty()) command += " " + chosen.front()->get_name();
  return fmt::format("{}: {} (see '{} --help')\n", command, error.what(), command);
}

}  // namespace

int main(int argc, char** argv) {
  using vramtrace::cli::kExitUsageOrTraceError;
  CLI::App app{"vramtrace: a GPU memory profiler and leak detector", "vramtrace"};
  app.set_version_flag("--version", "vramtrace " VRAMTRACE_VERSION);
  app.require_subcommand(1);
  app.failure_message(one_line_failure);
  app.footer(
      "Exit status: 'summary', 'leaks', 'oom', 'diff', 'timeline', 'peak', 'frag' and 'roles' exit "
      "0 when the report was written (also when it finds leaks, OOMs or regressions), 2 for a "
      "usage error, a moment the trace does not have, or a trace that cannot be read; 'export' "
      "and 'merge' exit 0 when the files were written, else 2; 'gate' exits 0 when every limit "
      "holds, 1 when one is broken, 2 for a usage or trace error, 3 when the recording has gaps "
      "(unless --accept-data-loss); 'run' exits with the recorded "
      "program's status, or 2 when it could not record (with --gate: the program's failure "
      "first, then 1 for a broken limit).");

  // A file-size limit (ulimit -f) reached while writing an output must be an error that the
  // command reports, with no partial file left (output_file.h), not a signal that kills it.
  std::signal(SIGXFSZ, SIG_IGN);

  int exit_status = vramtrace::cli::kExitOk;
  vramtrace::cli::register_run_command(app, &exit_status);
  vramtrace::cli::register_summary_command(app, &exit_status);
  vramtrace::cli::register_leaks_command(app, &exit_status);
  vramtrace::cli::register_oom_command(app, &exit_status);
  vramtrace::cli::register_merge_command(app, &exit_status);
  vramtrace::cli::register_gate_command(app, &exit_status);
  vramtrace::cli::register_timeline_command(app, &exit_status);
  vramtrace::cli::register_peak_command(app, &exit_status);
  vramtrace::cli::register_frag_command(app, &exit_status);
  vramtrace::cli::register_roles_command(app, &exit_status);
  vramtrace::cli::register_diff_command(app, &exit_status);
  vramtrace::cli::register_export_command(app, &exit_status);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    return status == 0 ? 0 : kExitUsageOrTraceError;
  } catch (const std::exception& error) {
    fmt::print(stderr, "vramtrace: internal error: {}\n", error.what());
    return kExitUsageOrTraceError;
  }
  return exit_status;
}
