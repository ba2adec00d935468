#include "cli/roles_command.h"

#include <fmt/core.h>

#include <memory>

#include "analysis/roles/role_advice.h"
#include "cli/advice_output.h"
#include "cli/time_query.h"
#include "text/text_style.h"

namespace vramtrace::cli {
namespace {

using Json = nlohmann::ordered_json;
using analysis::BlockRole;
using analysis::kBlockRoles;
using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;

Json totals_json(const analysis::RoleTotals& totals) {
  Json roles = Json::object();
  for (std::size_t r = 0; r < kBlockRoles; ++r)
    roles[std::string(analysis::block_role_name(static_cast<BlockRole>(r)))] = totals.bytes[r];
  return roles;
}

// The largest sites of the live activations, where the remedies would act first.
Json sites_json(const std::vector<analysis::RoleSite>& sites) {
  constexpr std::size_t kSitesShown = 10;
  Json out = Json::array();
  for (std::size_t i = 0; i < sites.size() && i < kSitesShown; ++i)
    out.push_back(
        {{"where", sites[i].where}, {"bytes", sites[i].bytes}, {"count", sites[i].count}});
  return out;
}

// The moment as the advice's text names it: "the peak", or the moment as given, quoted.
std::string moment_words(const std::string& moment) {
  return moment == "peak" ? std::string("the peak") : "'" + moment + "'";
}

}  // namespace

Json roles_json(const std::string& trace_path, const std::string& moment,
                const std::vector<analysis::ProcessRoles>& report) {
  analysis::RoleTotals all;
  Json processes = Json::array();
  for (const analysis::ProcessRoles& p : report) {
    Json counts = Json::object();
    for (std::size_t r = 0; r < kBlockRoles; ++r) {
      all.bytes[r] += p.live.bytes[r];
      all.count[r] += p.live.count[r];
      counts[std::string(analysis::block_role_name(static_cast<BlockRole>(r)))] = p.live.count[r];
    }
    processes.push_back(
        {{"upid", p.upid},
         {"pid", p.pid},
         {"seq", p.seq},
         {"time_ns", p.time_ns ? Json(*p.time_ns) : Json(nullptr)},
         {"total_bytes", p.live.total_bytes()},
         {"roles", totals_json(p.live)},
         {"blocks", std::move(counts)},
         {"activation_sites", sites_json(p.activation_sites)},
         {"advice", advice_json(analysis::role_advice(p, moment_words(moment), p.world_size))}});
  }
  return {{"trace", trace_path},       {"at", moment},
          {"level", "block"},          {"total_bytes", all.total_bytes()},
          {"roles", totals_json(all)}, {"processes", std::move(processes)}};
}

std::string roles_text(const std::string& trace_path, const std::string& moment,
                       const std::vector<analysis::ProcessRoles>& report) {
  if (report.empty())
    return fmt::format(
        "vramtrace: no process of {} has allocator events: roles are the caching allocator's "
        "blocks (PyTorch's tensors)\n",
        trace_path);
  std::string text =
      fmt::format("vramtrace: live blocks by role in {} at {} (block level)\n", trace_path, moment);
  for (const analysis::ProcessRoles& p : report) {
    const std::uint64_t total = p.live.total_bytes();
    text += fmt::format("\npid {} at seq {}: {} in {}\n", p.pid, p.seq, format_bytes_exact(total),
                        count_of(p.live.count[0] + p.live.count[1] + p.live.count[2] +
                                     p.live.count[3] + p.live.count[4] + p.live.count[5],
                                 "block", "blocks"));
    for (std::size_t r = 0; r < kBlockRoles; ++r) {
      const double share =
          total == 0 ? 0
                     : 100.0 * static_cast<double>(p.live.bytes[r]) / static_cast<double>(total);
      text += fmt::format(
          "  {:<16} {:>11} {:>6.1f}%  {}\n", analysis::block_role_name(static_cast<BlockRole>(r)),
          format_bytes(p.live.bytes[r]), share, count_of(p.live.count[r], "block", "blocks"));
    }
    const std::vector<analysis::Advice> advice =
        analysis::role_advice(p, moment_words(moment), p.world_size);
    if (!advice.empty()) text += "  advice:\n" + advice_text(advice, "    ");
  }
  return text;
}

void register_roles_command(CLI::App& app, int* exit_status) {
  auto at = std::make_shared<std::string>("peak");
  const auto report = [at](const storage::TraceReader& trace, const ReportScope& scope) {
    refuse_kind_and_level("roles", scope, /*takes_level=*/false);
    const analysis::MomentSpec moment = moment_from_option(*at);
    return with_time_index("roles", trace, [&](const storage::TimeIndex& index) {
      return analysis::build_role_report(trace, index, moment, scope.processes);
    });
  };
  register_report_command(
      app, exit_status,
      {"roles",
       "Where a PyTorch process's memory went at a moment, by role: parameters, gradients, "
       "optimizer state, activations, temporaries, unknown",
       [report, at](const std::string& path, const storage::TraceReader& trace,
                    const ReportScope& scope) {
         return roles_json(path, *at, report(trace, scope));
       },
       [report, at](const std::string& path, const storage::TraceReader& trace,
                    const ReportScope& scope) {
         return roles_text(path, *at, report(trace, scope));
       },
       nullptr,
       [at](CLI::App* sub) {
         sub->add_option("--at", *at,
                         std::string("The moment (default peak: the most bytes in live blocks): ") +
                             kMomentHelp);
       }});
}

}  // namespace vramtrace::cli
