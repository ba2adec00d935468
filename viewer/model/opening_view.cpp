#include "viewer/model/opening_view.h"

#include <algorithm>
#include <vector>

#include "viewer/model/stacked_timeline.h"

namespace vramtrace::viewer {

OpeningView opening_view(const analysis::Timeline& timeline) {
  OpeningView view;
  view.start_ns = timeline.start_ns;
  view.end_ns = timeline.end_ns;
  const std::vector<std::string> levels = StackedTimeline::levels_of(timeline);
  if (levels.empty()) {
    view.level = "segment";
    return view;
  }
  view.level =
      std::find(levels.begin(), levels.end(), "block") != levels.end() ? "block" : levels.front();
  if (view.level != "block") return view;
  // When the level's bytes change: a bucket that moved within itself or from the one before.
  std::vector<std::int64_t> changes;
  for (const analysis::TimelineSeries& series : timeline.series) {
    if (series.level != view.level) continue;
    std::uint64_t before = 0;
    for (const analysis::TimelineBucket& bucket : series.buckets) {
      if (bucket.min_bytes != bucket.max_bytes || bucket.max_bytes != before)
        changes.push_back(bucket.start_ns);
      before = bucket.last_bytes;
    }
  }
  std::sort(changes.begin(), changes.end());
  changes.erase(std::unique(changes.begin(), changes.end()), changes.end());
  if (changes.size() < 2) return view;
  // The longest quiet spell, from the trace's start or a change to the next change.
  std::int64_t spell_end = changes.front(), spell = changes.front() - timeline.start_ns;
  std::size_t changes_before = 0;
  for (std::size_t i = 1; i < changes.size(); ++i) {
    if (changes[i] - changes[i - 1] > spell) {
      spell = changes[i] - changes[i - 1];
      spell_end = changes[i];
      changes_before = i;
    }
  }
  const std::int64_t whole = timeline.end_ns - timeline.start_ns;
  if (spell < whole / 4 || changes_before > changes.size() / 10) return view;
  // A margin of a fiftieth of the span shown, so that the first change is not on the edge.
  view.start_ns = std::max(timeline.start_ns, spell_end - (timeline.end_ns - spell_end) / 50);
  return view;
}

}  // namespace vramtrace::viewer
