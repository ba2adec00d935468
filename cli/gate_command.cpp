#include "cli/gate_command.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "analysis/gate/gate_spec.h"
#include "analysis/values/byte_size.h"
#include "cli/exit_status.h"
#include "cli/gate_reports.h"
#include "cli/output_file.h"
#include "cli/output_format.h"
#include "cli/report_scope.h"
#include "cli/time_query.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {
namespace {

struct GateCommandOptions {
  std::string trace;
  std::string baseline;
  std::string suppressions;
  OutputFormat format = OutputFormat::kText;
  analysis::ProcessFilter filter;
  analysis::GateOptions gate;
  GateOutputs outputs;
};

// A report file: replaced when it exists (a CI job writes it each run), never over the trace
// or the baseline, never half written (output_file.h).
void write_report_file(const std::vector<std::string>& inputs, const std::string& path,
                       const std::string& content) {
  if (const std::string refusal = output_refusal(path, inputs, /*replace=*/true); !refusal.empty())
    throw ReportRefusal(refusal);
  write_output_file(path, [&](std::ostream& out) { out << content; });
}

// A size option: "512MiB", "2GB", "0".
void add_size_option(CLI::App* command, const std::string& name,
                     std::optional<std::uint64_t>* target, const std::string& help) {
  command
      ->add_option_function<std::string>(
          name,
          [name, target](const std::string& text) {
            const std::optional<std::uint64_t> bytes = analysis::parse_byte_size(text);
            if (!bytes)
              throw CLI::ValidationError(name, "'" + text +
                                                   "' is not a size (such as 0, 512MiB, 2GB; "
                                                   "units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
            *target = bytes;
          },
          help)
      ->type_name("SIZE");
}

// A suppressions file is a few rules: one past this is not one (`/dev/zero` would never end).
constexpr std::size_t kMaxSuppressionsBytes = 1 << 20;

std::vector<analysis::SuppressionRule> read_suppressions(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ReportRefusal("cannot read the suppressions file " + path);
  std::string text(kMaxSuppressionsBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));
  if (text.size() > kMaxSuppressionsBytes)
    throw ReportRefusal(
        fmt::format("the suppressions file {} is larger than {} MiB; it holds a "
                    "few rules, one a line",
                    path, kMaxSuppressionsBytes >> 20));
  analysis::SuppressionParseError error;
  std::vector<analysis::SuppressionRule> rules = analysis::parse_suppressions(text, &error);
  if (rules.empty() && error.line != 0)
    throw ReportRefusal(fmt::format("{}:{}: {}", path, error.line, error.message));
  return rules;
}

}  // namespace

int judge_trace(std::string_view command, const std::string& trace_path,
                const analysis::GateOptions& options, const std::string& baseline_path,
                const GateOutputs& outputs, bool json, std::FILE* report_to) {
  std::unique_ptr<storage::TraceReader> baseline;
  if (!baseline_path.empty()) {
    const int opened = run_on_trace(command, baseline_path, [&](const storage::TraceReader&) {});
    if (opened != kExitOk) return opened;
    storage::OpenFailure failure;
    baseline = storage::TraceReader::open(baseline_path, &failure);
  } else if (options.limits.needs_baseline()) {
    fmt::print(stderr,
               "vramtrace {}: --max-peak-increase and --max-leak-increase need --baseline\n",
               command);
    return kExitUsageOrTraceError;
  }
  std::vector<std::string> inputs{trace_path};
  if (!baseline_path.empty()) inputs.push_back(baseline_path);
  {
    const std::vector<std::string> files{outputs.junit, outputs.json, outputs.markdown};
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (files[i].empty()) continue;
      std::string refusal = output_refusal(files[i], inputs, /*replace=*/true);
      for (std::size_t j = i + 1; j < files.size() && refusal.empty(); ++j)
        if (!files[j].empty()) refusal = same_output_twice(files[i], files[j]);
      if (!refusal.empty()) {
        fmt::print(stderr, "vramtrace {}: {}\n", command, refusal);
        return kExitUsageOrTraceError;
      }
    }
  }
  bool passed = false;
  bool vouched = false;
  const int status = run_on_trace(command, trace_path, [&](const storage::TraceReader& trace) {
    const analysis::GateResult result = analysis::evaluate_gate(trace, options, baseline.get());
    passed = result.passed();
    vouched = result.vouched();
    if (!outputs.junit.empty())
      write_report_file(inputs, outputs.junit, gate_junit(trace_path, result, outputs.stacks));
    if (!outputs.json.empty())
      write_report_file(
          inputs, outputs.json,
          gate_json(trace_path, result)
                  .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
              "\n");
    if (!outputs.markdown.empty())
      write_report_file(inputs, outputs.markdown,
                        gate_markdown(trace_path, result, outputs.stacks));
    if (json)
      fmt::print(report_to, "{}\n",
                 gate_json(trace_path, result)
                     .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    else
      fmt::print(report_to, "{}",
                 text::printable_text(gate_text(trace_path, result, outputs.stacks)));
  });
  if (status != kExitOk) return status;
  if (!passed) return kExitGateFailed;
  return vouched ? kExitOk : kExitGateNotVouched;
}

void register_gate_command(CLI::App& app, int* exit_status) {
  auto options = std::make_shared<GateCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "gate",
      "Fail (exit 1) when a trace breaks a limit: leaked bytes or allocations, peak "
      "device memory, growth per iteration, a role's bytes at the peak, or growth against a "
      "baseline trace");
  sub->add_option("FILE", options->trace, "The trace, as written by 'vramtrace run -o FILE'")
      ->required();
  analysis::GateLimits& limits = options->gate.limits;
  add_size_option(sub, "--max-leaked-bytes", &limits.max_leaked_bytes,
                  "Most bytes leaked (after suppressions), all selected processes together");
  sub->add_option("--max-leaked-count", limits.max_leaked_count,
                  "Most allocations leaked (after suppressions)");
  add_size_option(sub, "--max-peak", &limits.max_peak,
                  "Most device memory any process may hold on any device at once");
  sub->add_option("--baseline", options->baseline,
                  "An earlier trace of the same workload, for the --max-*-increase limits");
  sub->add_option("--max-peak-increase", limits.max_peak_increase_percent,
                  "Most growth of the peak on each device against --baseline, in percent")
      ->type_name("PCT")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // A NaN limit would pass every check, and a negative one fail every check.
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0)
              return "'" + text + "' is not a percentage of 0 or more";
            return {};
          },
          "PCT"));
  add_size_option(sub, "--max-leak-increase", &limits.max_leak_increase,
                  "Most growth of the leaked bytes against --baseline");
  add_size_option(sub, "--max-growth", &limits.max_growth,
                  "Most growth of live memory per iteration in each process: the stacks whose "
                  "live bytes rise from one iteration to the next (a leak in progress, even if "
                  "freed at exit)");
  sub->add_option_function<std::vector<std::string>>(
         "--max-role",
         [options](const std::vector<std::string>& terms) {
           for (const std::string& term : terms) {
             const std::size_t equals = term.find('=');
             std::string error = "'" + term + "' is not ROLE=SIZE (such as activation=4GiB)";
             if (equals == std::string::npos ||
                 !analysis::set_role_limit(std::string_view(term).substr(0, equals),
                                           std::string_view(term).substr(equals + 1),
                                           &options->gate.limits, &error))
               throw CLI::ValidationError("--max-role", error);
           }
         },
         "Most bytes of a role (parameter, gradient, optimizer_state, activation, temporary, "
         "unknown) live at each process's blocks' peak, as 'vramtrace roles' tells them; "
         "repeatable. Needs allocator events (PyTorch)")
      ->type_name("ROLE=SIZE")
      ->allow_extra_args(false);
  sub->add_option("--iteration-marker", options->gate.growth_marker,
                  "The marker whose occurrences are the iterations for --max-growth: ranges or "
                  "marks of this name, or numbered '<name> <n>' as vramtrace.iteration() makes. "
                  "Default: 'iteration' where a process has it, else the iterations of its "
                  "training loop, found from its backward passes")
      ->type_name("NAME")
      ->check(marker_name());
  sub->add_option_function<std::string>(
         "--level",
         [options](const std::string& name) {
           options->gate.level =
               name == "block" ? analysis::LeakLevel::kBlock : analysis::LeakLevel::kSegment;
         },
         "block: a caching allocator's live blocks (tensors) are leaks, its segments cache; "
         "segment: every live allocation but blocks. Default: block where there are allocator "
         "events")
      ->check(CLI::IsMember({"block", "segment"}));
  sub->add_option("--suppressions", options->suppressions,
                  "A file of rules (function:GLOB, file:GLOB, module:GLOB; '#' comments) whose "
                  "leaks do not count; the report says how many each hid")
      ->type_name("FILE");
  sub->add_option("--junit", options->outputs.junit, "Also write a JUnit XML report here")
      ->type_name("OUT.xml");
  sub->add_option("--json", options->outputs.json, "Also write the JSON report here")
      ->type_name("OUT.json");
  sub->add_option("--markdown", options->outputs.markdown,
                  "Also write a Markdown summary here (for CI job summaries)")
      ->type_name("OUT.md");
  sub->add_flag("--accept-data-loss", options->gate.accept_gaps,
                "Judge what was recorded even where the recording has gaps (a process that "
                "stopped recording or was not recorded to its end, events lost): without it such "
                "a trace exits 3 however its checks come out, since a leak in what was not "
                "recorded cannot fail them");
  add_format_option(sub, &options->format);
  sub->add_flag_function(
      "--native", [options](std::int64_t) { options->outputs.stacks = text::StackView::kNative; },
      "Show every frame of the leaks' stacks. By default, where a stack has Python frames, each "
      "run of interpreter, binding and framework frames between them is one line");
  add_process_filter_options(sub, &options->filter);
  sub->footer(
      "Exit status: 0 when every limit given holds (or none is given); 1 when a limit is "
      "broken; 2 for a usage error, a filter that matches no process, a suppressions file that "
      "does not parse, or a trace that cannot be read; 3 when every limit holds on what was "
      "recorded but the recording has gaps (a process stopped recording or was not recorded "
      "to its end, or events were lost; each is named), unless --accept-data-loss.");
  sub->callback([options, exit_status] {
    analysis::GateOptions gate = options->gate;
    const int resolved = run_on_trace("gate", options->trace, [&](const storage::TraceReader& t) {
      gate.processes = resolve_scope(t, options->trace, options->filter).processes;
      if (!options->suppressions.empty())
        gate.suppressions = read_suppressions(options->suppressions);
    });
    if (resolved != kExitOk) {
      *exit_status = resolved;
      return;
    }
    *exit_status = judge_trace("gate", options->trace, gate, options->baseline, options->outputs,
                               options->format == OutputFormat::kJson, stdout);
  });
}

}  // namespace vramtrace::cli
