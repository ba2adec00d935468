#include "viewer/model/time_axis.h"

#include <algorithm>
#include <cmath>

namespace vramtrace::viewer {

TimeAxis::TimeAxis(std::int64_t trace_start_ns, std::int64_t trace_end_ns, int width)
    : trace_start_(trace_start_ns),
      trace_end_(std::max(trace_end_ns, trace_start_ns + 1)),
      start_(trace_start_),
      end_(trace_end_),
      width_(std::max(width, 1)) {}

void TimeAxis::set_trace_range(std::int64_t trace_start_ns, std::int64_t trace_end_ns) {
  const bool whole = shows_whole_trace();
  trace_start_ = trace_start_ns;
  trace_end_ = std::max(trace_end_ns, trace_start_ns + 1);
  if (whole) {
    start_ = trace_start_;
    end_ = trace_end_;
  }
  clamp();
}

void TimeAxis::set_width(int width) {
  width_ = std::max(width, 1);
}

double TimeAxis::ns_per_pixel() const {
  return static_cast<double>(end_ - start_) / width_;
}

double TimeAxis::x_of(std::int64_t ns) const {
  return static_cast<double>(ns - start_) / ns_per_pixel();
}

std::int64_t TimeAxis::ns_at(double x) const {
  const auto ns = start_ + static_cast<std::int64_t>(std::llround(x * ns_per_pixel()));
  return std::clamp(ns, trace_start_, trace_end_);
}

std::pair<std::int64_t, std::int64_t> TimeAxis::column_span(int column) const {
  const auto edge = [&](int x) {
    return start_ + static_cast<std::int64_t>(std::floor(x * ns_per_pixel()));
  };
  return {edge(column), std::max(edge(column + 1), edge(column) + 1)};
}

void TimeAxis::zoom(double factor, double anchor_x) {
  if (factor <= 0) return;
  const double anchor_ns = start_ + anchor_x * ns_per_pixel();
  const std::int64_t min_span = std::min(kMinSpanNs, trace_end_ - trace_start_);
  const double span =
      std::max(static_cast<double>(end_ - start_) / factor, static_cast<double>(min_span));
  const double fraction = std::clamp(anchor_x / width_, 0.0, 1.0);
  start_ = static_cast<std::int64_t>(std::llround(anchor_ns - fraction * span));
  end_ = start_ + static_cast<std::int64_t>(std::llround(span));
  clamp();
}

void TimeAxis::pan(double dx) {
  const auto shift = static_cast<std::int64_t>(std::llround(dx * ns_per_pixel()));
  start_ += shift;
  end_ += shift;
  clamp();
}

void TimeAxis::show(std::int64_t from_ns, std::int64_t to_ns) {
  start_ = std::min(from_ns, to_ns);
  end_ = std::max(from_ns, to_ns);
  const std::int64_t min_span = std::min(kMinSpanNs, trace_end_ - trace_start_);
  if (end_ - start_ < min_span) end_ = start_ + min_span;
  clamp();
}

void TimeAxis::clamp() {
  // Keep the span, shifted back inside the trace; a span longer than the trace is the trace.
  const std::int64_t span = std::min(end_ - start_, trace_end_ - trace_start_);
  if (start_ < trace_start_) start_ = trace_start_;
  if (start_ + span > trace_end_) start_ = trace_end_ - span;
  end_ = start_ + span;
}

}  // namespace vramtrace::viewer
