// The timeline's horizontal geometry: which nanoseconds of the trace the view shows, and where
// each falls in pixels. A value type, apart from painting, so that zoom, pan and hit-testing are
// unit-tested (tests/viewer/geometry_test.cpp) and every view that follows the timeline (the
// leak tree's range, the fragmentation map's slider) converts the same way.
#pragma once

#include <cstdint>
#include <utility>

namespace vramtrace::viewer {

class TimeAxis {
 public:
  // The shortest span a view can zoom to: about a nanosecond a pixel, the timestamps' unit.
  static constexpr std::int64_t kMinSpanNs = 1000;

  TimeAxis() = default;
  // Shows the whole of [trace_start_ns, trace_end_ns] over `width` pixels.
  TimeAxis(std::int64_t trace_start_ns, std::int64_t trace_end_ns, int width);

  std::int64_t trace_start_ns() const { return trace_start_; }
  std::int64_t trace_end_ns() const { return trace_end_; }
  std::int64_t visible_start_ns() const { return start_; }
  std::int64_t visible_end_ns() const { return end_; }
  int width() const { return width_; }

  // The trace grew (live mode): keeps the visible span, unless the whole trace was visible, in
  // which case the whole trace stays visible.
  void set_trace_range(std::int64_t trace_start_ns, std::int64_t trace_end_ns);
  void set_width(int width);

  // x in [0, width] for a time in the visible span (outside it: beyond the edges).
  double x_of(std::int64_t ns) const;
  // The time at pixel x, clamped to the trace.
  std::int64_t ns_at(double x) const;
  // Pixel column `column` covers [first, second) of time.
  std::pair<std::int64_t, std::int64_t> column_span(int column) const;

  // factor > 1 zooms in, < 1 out; the time under anchor_x stays under it. The span never
  // leaves the trace and never gets shorter than kMinSpanNs (or the trace, if shorter).
  void zoom(double factor, double anchor_x);
  // Moves the view by dx pixels of the current scale (positive: to later times), within the
  // trace.
  void pan(double dx);
  // Shows [from, to], clamped to the trace.
  void show(std::int64_t from_ns, std::int64_t to_ns);
  bool shows_whole_trace() const { return start_ == trace_start_ && end_ == trace_end_; }

 private:
  void clamp();
  double ns_per_pixel() const;

  std::int64_t trace_start_ = 0, trace_end_ = 1;
  std::int64_t start_ = 0, end_ = 1;
  int width_ = 1;
};

}  // namespace vramtrace::viewer
