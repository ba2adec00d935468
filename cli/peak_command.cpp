#include "cli/peak_command.h"

#include <fmt/core.h>

#include "cli/csv_table.h"
#include "cli/peak_output.h"
#include "cli/stack_json.h"
#include "cli/time_query.h"
#include "text/stack_folding.h"
#include "text/text_style.h"

namespace vramtrace::cli {

void register_peak_command(CLI::App& app, int* exit_status) {
  const auto report = [](const storage::TraceReader& trace, const ReportScope& scope, bool folded) {
    refuse_kind_and_level("peak", scope, /*takes_level=*/true);
    std::vector<analysis::DevicePeakAt> peaks =
        with_time_index("peak", trace, [&](const storage::TimeIndex& index) {
          // The trees of the text merge stacks as the text shows them; the JSON's keep every
          // frame.
          return analysis::build_peak_report(
              trace, index, scope.processes,
              folded ? analysis::StackShape(text::folded_frames) : analysis::StackShape());
        });
    analysis::keep_peaks_in_scope(peaks, scope.allocations.device, scope.level);
    return peaks;
  };
  register_report_command(
      app, exit_status,
      {"peak",
       "Per process and device, the moment of the most live memory and what was live then, as "
       "callsite trees (top-down and bottom-up)",
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) {
         return peak_report_json(path, report(trace, scope, false));
       },
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) {
         return peak_report_text(
             path, report(trace, scope, scope.stacks == text::StackView::kPythonFirst),
             scope.describe());
       },
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return peak_report_csv(report(trace, scope, false));
       },
       nullptr, true});
}

}  // namespace vramtrace::cli
