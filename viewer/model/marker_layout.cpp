#include "viewer/model/marker_layout.h"

#include <QFontMetricsF>
#include <algorithm>
#include <cmath>
#include <optional>

namespace vramtrace::viewer {

MarkerLayout lay_out_markers(const std::vector<TimelineMarker>& markers, const TimeAxis& axis,
                             int rows) {
  MarkerLayout layout;
  const auto width = static_cast<double>(axis.width());
  // Per row: how far it is painted, and the band that narrow ranges may still extend.
  std::vector<double> painted(static_cast<std::size_t>(std::max(rows, 0)), -1.0);
  std::vector<std::optional<std::size_t>> open_merge(painted.size());
  std::optional<double> last_mark_pixel;
  for (const TimelineMarker& marker : markers) {
    const double from = axis.x_of(marker.start_ns);
    if (from > width) break;  // sorted by start: nothing later is visible
    if (!marker.range) {
      const double pixel = std::floor(from);
      if (from < 0 || pixel == last_mark_pixel) continue;
      layout.marks.push_back({from, &marker});
      last_mark_pixel = pixel;
      continue;
    }
    if (marker.depth < 0 || marker.depth >= rows) continue;
    const double to = std::min(axis.x_of(marker.end_ns), width);
    if (to <= 0 || from >= width) continue;  // ends at the left edge, or starts at the right
    const auto row = static_cast<std::size_t>(marker.depth);
    const double start = std::max(from, 0.0);
    if (to - start >= 1) {
      layout.bands.push_back({marker.depth, start, to, &marker, false});
      painted[row] = std::max(painted[row], to);
      open_merge[row].reset();
      continue;
    }
    const double pixel = std::floor(start);
    if (pixel + 1 <= painted[row]) continue;  // that pixel of the row is painted already
    if (open_merge[row] && layout.bands[*open_merge[row]].to_x >= pixel) {
      layout.bands[*open_merge[row]].to_x = pixel + 1;
    } else {
      open_merge[row] = layout.bands.size();
      layout.bands.push_back({marker.depth, pixel, pixel + 1, &marker, true});
    }
    painted[row] = pixel + 1;
  }
  return layout;
}

QString band_label(const MarkerBand& band, const QString& name, const QFontMetricsF& metrics) {
  const double room = band.to_x - band.from_x - 2 * kBandLabelMargin;
  if (band.merged || name.isEmpty() || room <= 0) return {};
  const QString shown = metrics.elidedText(name, Qt::ElideRight, room);
  // Elided to the ellipsis alone (or to nothing): that names nothing.
  if (shown != name && shown.size() < 2) return {};
  return shown;
}

}  // namespace vramtrace::viewer
