#include "cli/frag_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "cli/csv_table.h"
#include "cli/frag_output.h"
#include "cli/time_query.h"
#include "text/text_style.h"

namespace vramtrace::cli {

void register_frag_command(CLI::App& app, int* exit_status) {
  auto at = std::make_shared<std::string>("end");
  const auto report = [at](const storage::TraceReader& trace, const ReportScope& scope) {
    // The allocator's view: blocks laid over their segments; --level and --kind do not apply.
    refuse_kind_and_level("frag", scope, /*takes_level=*/false);
    const analysis::MomentSpec moment = moment_from_option(*at);
    return with_time_index("frag", trace, [&](const storage::TimeIndex& index) {
      return analysis::build_fragmentation_report(trace, index, moment, scope.processes,
                                                  scope.allocations.device);
    });
  };
  register_report_command(
      app, exit_status,
      {"frag",
       "Map the caching allocator's segments at a moment: used and free blocks, fragmentation, "
       "the largest request that fits",
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return fragmentation_json(report(trace, scope));
       },
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) {
         return fragmentation_text(path, report(trace, scope));
       },
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return fragmentation_csv(report(trace, scope));
       },
       [at](CLI::App* sub) {
         sub->add_option("--at", *at, std::string("The moment (default end): ") + kMomentHelp);
       }});
}

}  // namespace vramtrace::cli
