// Where the timeline draws its markers, at level of detail: NVTX and API ranges as bands (one row
// per nesting depth), marks as lines. Ranges narrower than a pixel that follow each other on a
// row are merged into one band, and marks on one pixel into one line, so a trace with tens of
// thousands of iterations costs a band per pixel, not a rectangle per iteration. A band names its
// range where the name fits, elided where only part of it does. Geometry only (tested in
// tests/viewer/viewer_geometry_test.cpp, the labels in viewer_gui_test.cpp, which has fonts); the
// widget paints it.
#pragma once

#include <QString>
#include <vector>

#include "viewer/model/time_axis.h"
#include "viewer/model/trace_queries.h"

class QFontMetricsF;

namespace vramtrace::viewer {

struct MarkerBand {
  int row = 0;                             // the range's depth
  double from_x = 0, to_x = 0;             // in the axis's pixels, within [0, width]
  const TimelineMarker* marker = nullptr;  // the first range drawn in the band
  bool merged = false;                     // stands for ranges narrower than a pixel: no label
};

struct MarkerLine {
  double x = 0;
  const TimelineMarker* marker = nullptr;
};

struct MarkerLayout {
  std::vector<MarkerBand> bands;
  std::vector<MarkerLine> marks;
};

// `markers` sorted by start (as TraceOverview keeps them), and outliving the layout. Ranges
// deeper than `rows` - 1 are left out.
MarkerLayout lay_out_markers(const std::vector<TimelineMarker>& markers, const TimeAxis& axis,
                             int rows);

// Where a band's name is drawn: inside the band, kBandLabelMargin pixels in from each side.
inline constexpr double kBandLabelMargin = 2;
// The name a band shows, in `metrics`' font: the whole name where it fits within the margins,
// else the name elided at the right ("optimi…"); empty where not even its first letter and the
// ellipsis fit, and on a merged band (it stands for many ranges, none of which it names).
QString band_label(const MarkerBand& band, const QString& name, const QFontMetricsF& metrics);

}  // namespace vramtrace::viewer
