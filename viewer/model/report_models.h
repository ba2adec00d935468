// The summary page and the fragmentation numbers as item models (QStandardItemModel: two
// columns, item and value, sections as top-level rows), filled from analysis/'s values only.
#pragma once

#include <QStandardItemModel>

#include "analysis/allocator/fragmentation.h"
#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "analysis/time/timeline_window.h"
#include "viewer/model/stacked_timeline.h"
#include "viewer/model/trace_queries.h"

namespace vramtrace::viewer {

// Sections: Trace, Processes, Memory by kind, Peaks, Allocator, Leaks, Advice (each rule with
// its evidence below it), Problems (only when there are warnings, bad frees or stats above
// info). `leaks`: the leak report
// at the end of the trace, as `vramtrace leaks` gives it. Times are since `origin_ns`: the
// timeline's start (the first allocation), so that they read as the timeline's axis does.
void fill_summary_model(const std::string& trace_path, const analysis::Summary& summary,
                        const analysis::LeakReport& leaks, std::int64_t origin_ns,
                        QStandardItemModel* model);

// The range selected on the timeline, as a first section "Selected range": its times (since
// the timeline's start), each timeline layer's least and most bytes in it, and its leaks
// (`leaks --between`). Replaces the section of an earlier range. The least and most are exact
// from `window` (the range's one-bucket timeline_window.h, at `level`) when it is; otherwise
// they are over the buckets of `timeline` the range touches, which a row says.
void add_range_section(const TimeRange& range, const StackedTimeline& timeline,
                       const analysis::TimelineWindow* window, std::string_view level,
                       const analysis::LeakReport& range_leaks, QStandardItemModel* model);

// One row per number of `vramtrace frag`: used, free, largest free, external and internal
// fragmentation, the largest request that fits, segments, and memory outside the allocator.
void fill_fragmentation_numbers(const analysis::FragmentationReport& report,
                                QStandardItemModel* model);

}  // namespace vramtrace::viewer
