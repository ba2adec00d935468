#include "cli/trace_command.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>

#include "cli/exit_status.h"
#include "cli/output_format.h"
#include "cli/progress_line.h"
#include "text/text_style.h"

namespace vramtrace::cli {
namespace {

int report_error(std::string_view command, std::string_view message) {
  // The message becomes one line even if something underneath put a newline in it.
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  fmt::print(stderr, "vramtrace {}: {}\n", command, line);
  return kExitUsageOrTraceError;
}

}  // namespace

int run_on_trace(std::string_view command, const std::string& path,
                 const std::function<void(const storage::TraceReader&)>& report) {
  try {
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    if (!trace) return report_error(command, failure.message);
    report(*trace);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      return report_error(command, std::string("cannot write the report: ") + std::strerror(errno));
    }
    return kExitOk;
  } catch (const ReportRefusal& refusal) {
    return report_error(command, refusal.what());
  } catch (const storage::TraceError& error) {
    // Most name the file; a row's value checked deep in a read does not know it.
    const std::string_view what = error.what();
    return report_error(
        command, what.starts_with(path) ? std::string(what) : fmt::format("{}: {}", path, what));
  } catch (const std::exception& error) {
    return report_error(command, fmt::format("{}: {}", path, error.what()));
  }
}

void register_report_command(CLI::App& app, int* exit_status, ReportCommand command) {
  struct Options {
    std::string trace;
    ReportOptions report;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(command.name, command.description);
  sub->add_option("FILE", options->trace, "The trace, as written by 'vramtrace run -o FILE'")
      ->required();
  add_report_options(sub, &options->report);
  if (command.shows_stacks) add_stack_view_option(sub, &options->report);
  if (command.add_options) command.add_options(sub);
  sub->footer(std::string(kReportExitStatusHelp));
  sub->callback([options, exit_status, command] {
    *exit_status =
        run_on_trace(command.name, options->trace, [&](const storage::TraceReader& trace) {
          std::string output;
          {
            // Erased before the report is printed, so that the two never mix on a terminal.
            std::optional<ProgressLine> progress(
                std::in_place,
                fmt::format("vramtrace {}: reading {}", command.name, options->trace));
            const ReportScope scope = resolve_scope(trace, options->trace, options->report);
            if (options->report.format == OutputFormat::kCsv) {
              if (!command.csv) throw ReportRefusal("--format csv: this report has no CSV form");
              output = command.csv(options->trace, trace, scope);
            } else if (options->report.format == OutputFormat::kJson && command.json_members) {
              // Printed as it is written, once the report is made: it can be as large as the
              // trace.
              JsonObjectWriter writer([&](std::string_view text) {
                progress.reset();
                std::fwrite(text.data(), 1, text.size(), stdout);
              });
              command.json_members(options->trace, trace, scope, writer);
              if (const auto filters = filters_json(scope)) writer.member("filters", *filters);
              writer.finish();
            } else if (options->report.format == OutputFormat::kJson) {
              nlohmann::ordered_json document = command.json(options->trace, trace, scope);
              add_filters_json(&document, scope);
              // Paths and argv need not be UTF-8: replace what JSON cannot carry, not fail.
              output =
                  document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                  "\n";
            } else {
              output = text::printable_text(command.text(options->trace, trace, scope));
            }
          }
          fmt::print("{}", output);
        });
  });
}

}  // namespace vramtrace::cli
