#include "cli/timeline_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <memory>

#include "cli/csv_table.h"
#include "cli/time_query.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_seconds;

namespace {

using Json = nlohmann::ordered_json;

constexpr int kChartRows = 4;
// Eighths of a character cell, from the bottom: a row of these is a bar chart.
constexpr std::array<std::string_view, 8> kEighths{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr std::size_t kLabelWidth = 10;

std::string chart(const analysis::TimelineSeries& series) {
  std::string text;
  for (int row = 0; row < kChartRows; ++row) {
    std::string label;
    if (row == 0) label = format_bytes(series.peak_bytes);
    if (row == kChartRows - 1) label = "0 B";
    text += fmt::format("{:>{}} |", label, kLabelWidth);
    const int below = (kChartRows - 1 - row) * 8;
    for (const analysis::TimelineBucket& bucket : series.buckets) {
      const auto eighths =
          series.peak_bytes == 0
              ? 0
              : static_cast<int>((static_cast<long double>(bucket.max_bytes) * kChartRows * 8) /
                                     static_cast<long double>(series.peak_bytes) +
                                 0.5L);
      const int filled = std::clamp(eighths - below, 0, 8);
      // A bucket with memory in it shows at least a sliver.
      const bool sliver = row == kChartRows - 1 && filled == 0 && bucket.max_bytes != 0;
      text += filled == 0 ? (sliver ? std::string(kEighths[0]) : std::string(" "))
                          : std::string(kEighths[static_cast<std::size_t>(filled - 1)]);
    }
    text += "\n";
  }
  return text;
}

}  // namespace

Json timeline_json(const std::string& trace_path, const analysis::Timeline& timeline) {
  Json starts = Json::array();
  if (!timeline.series.empty()) {
    for (const analysis::TimelineBucket& bucket : timeline.series.front().buckets)
      starts.push_back(bucket.start_ns);
  }
  Json series = Json::array();
  for (const analysis::TimelineSeries& s : timeline.series) {
    Json min = Json::array(), max = Json::array(), last = Json::array();
    for (const analysis::TimelineBucket& bucket : s.buckets) {
      min.push_back(bucket.min_bytes);
      max.push_back(bucket.max_bytes);
      last.push_back(bucket.last_bytes);
    }
    series.push_back({{"upid", s.upid},
                      {"pid", s.pid},
                      {"device", s.device},
                      {"kind", s.kind_name},
                      {"level", s.level},
                      {"peak_bytes", s.peak_bytes},
                      {"min", std::move(min)},
                      {"max", std::move(max)},
                      {"last", std::move(last)}});
  }
  return {{"trace", trace_path},
          {"start_ns", timeline.start_ns},
          {"end_ns", timeline.end_ns},
          {"bucket_start_ns", std::move(starts)},
          {"series", std::move(series)}};
}

std::string timeline_text(const std::string& trace_path, const analysis::Timeline& timeline,
                          const std::string& scope) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (timeline.series.empty()) return fmt::format("vramtrace: no allocations in {}\n", where);
  std::string text =
      fmt::format("vramtrace: live bytes over {} in {} ({}, each bucket's max)\n",
                  format_seconds(timeline.end_ns - timeline.start_ns), where,
                  count_of(timeline.series.front().buckets.size(), "bucket", "buckets"));
  for (const analysis::TimelineSeries& series : timeline.series) {
    text +=
        fmt::format("\npid {} device {} {} ({} level): peak {}, at the end {}\n", series.pid,
                    series.device, series.kind_name, series.level, format_bytes(series.peak_bytes),
                    format_bytes(series.buckets.empty() ? 0 : series.buckets.back().last_bytes));
    text += chart(series);
    const std::size_t width = series.buckets.size();
    const std::string left = "0 s", right = format_seconds(timeline.end_ns - timeline.start_ns);
    text += fmt::format("{:>{}} +{}\n", "", kLabelWidth, std::string(width, '-'));
    const std::size_t room =
        std::max(width + 1 > left.size() ? width + 1 - left.size() : 0, right.size() + 1);
    text += fmt::format("{:>{}}  {}{:>{}}\n", "", kLabelWidth, left, right, room);
  }
  return text;
}

// --device, --kind and --level select series: each series is one device, kind and level.
void keep_selected_series(analysis::Timeline* timeline, const ReportScope& scope) {
  std::erase_if(timeline->series, [&](const analysis::TimelineSeries& series) {
    return !scope.allocations.matches(series.device, series.kind) ||
           (scope.level && series.level != analysis::level_name(*scope.level));
  });
}

// One row per series and bucket.
std::string timeline_csv(const analysis::Timeline& timeline) {
  CsvTable table({"upid", "pid", "device", "kind", "level", "start_ns", "end_ns", "min_bytes",
                  "max_bytes", "last_bytes"});
  for (const analysis::TimelineSeries& series : timeline.series) {
    for (const analysis::TimelineBucket& bucket : series.buckets) {
      table.row({csv_number(series.upid), csv_number(series.pid), csv_number(series.device),
                 series.kind_name, series.level, csv_number(bucket.start_ns),
                 csv_number(bucket.end_ns), csv_number(bucket.min_bytes),
                 csv_number(bucket.max_bytes), csv_number(bucket.last_bytes)});
    }
  }
  return table.text();
}

void register_timeline_command(CLI::App& app, int* exit_status) {
  auto buckets = std::make_shared<std::uint32_t>(64);
  const auto report = [buckets](const storage::TraceReader& trace, const ReportScope& scope) {
    analysis::Timeline timeline =
        with_time_index("timeline", trace, [&](const storage::TimeIndex& index) {
          return analysis::build_timeline(trace, index, *buckets, scope.processes);
        });
    keep_selected_series(&timeline, scope);
    return timeline;
  };
  register_report_command(
      app, exit_status,
      {"timeline",
       "Live bytes over time per process, device and kind: a chart, or min/max/last per bucket",
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) { return timeline_json(path, report(trace, scope)); },
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) {
         return timeline_text(path, report(trace, scope), scope.describe());
       },
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return timeline_csv(report(trace, scope));
       },
       [buckets](CLI::App* sub) {
         sub->add_option("--buckets", *buckets,
                         fmt::format("Equal time buckets to divide the trace into, 1 to {} "
                                     "(default 64: one chart column each)",
                                     analysis::kMaxTimelineBuckets))
             ->check(CLI::Range(std::uint32_t{1}, analysis::kMaxTimelineBuckets));
       }});
}

}  // namespace vramtrace::cli
