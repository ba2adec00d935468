// The timeline: live bytes over time, stacked by device and kind at one level, with NVTX and API
// ranges as bands above, marks as lines and OOM failures as red flags. Wheel: zoom at the
// mouse; drag: pan; Shift+drag: select a range (a click clears it); double click: the whole
// trace. Hovering shows the time, the bytes of each layer then and the top callsites live then
// (asked of the controller, shown when they arrive).
//
// Painted at level of detail: one column per pixel from StackedTimeline::columns(), so the cost
// of a frame follows the widget's width, never the trace's size. Zoomed in past the time
// index's resolution (exact_zoom.h), the widget asks for the exact series of the visible columns
// (window_wanted) and draws those once they come; until then, and where the window holds too
// many events, it draws the buckets and the hover says so.
//
// By role (level "role"): one process's blocks stacked by their role
// (analysis/roles/block_roles.h), from the controller's sweep of their lives
// (analysis/roles/role_timeline.h), asked for once with roles_wanted; each view re-buckets the
// sweep over its own columns, exact at any zoom.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/roles/role_timeline.h"
#include "viewer/model/exact_zoom.h"
#include "viewer/model/stacked_timeline.h"
#include "viewer/model/time_axis.h"
#include "viewer/model/trace_queries.h"

namespace vramtrace::viewer {

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  // A new trace shows whole; the same trace grown (live mode) keeps the view.
  void set_overview(std::shared_ptr<const TraceOverview> overview);
  void set_level(const std::string& level);
  void set_ooms(std::shared_ptr<const std::vector<OomFlag>> ooms);
  void set_live_groups(std::int64_t ns,
                       std::shared_ptr<const std::vector<analysis::LeakGroup>> groups);
  void set_selection(std::optional<TimeRange> range);  // as if the user selected it
  void set_cursor(std::optional<std::int64_t> ns);     // the fragmentation map's moment
  // The exact series of a window asked for by window_wanted.
  void set_zoomed_timeline(std::shared_ptr<const ZoomedTimeline> zoomed);
  // The sweep the "role" level draws (unset: none yet, or no process with allocator events).
  void set_roles(std::shared_ptr<const analysis::RoleSweep> roles);
  bool by_role() const { return level_ == "role"; }

  const TimeAxis& axis() const { return axis_; }
  // The whole trace from the index's buckets (the legend's peaks).
  const StackedTimeline& stacked() const { return stacked_; }
  const std::string& level() const { return level_; }
  // What is drawn now: the exact series of the visible columns when they have come for this
  // view, else the buckets.
  const StackedTimeline& drawn() const;
  bool drawn_exact() const { return &drawn() != &stacked_; }
  std::optional<TimeRange> selection() const { return selection_; }
  // The plot's rectangle: where time runs along x.
  QRect plot_rect() const;
  // What the hover box says: the time, each layer's bytes, and the callsites live then once the
  // controller's answer for that time has come; empty when the mouse is not over the plot.
  QStringList hover_text() const;
  // What the legend says, a line per layer (in layer order).
  QStringList legend_text() const;

  QSize sizeHint() const override { return {900, 300}; }

 signals:
  void selection_changed(std::optional<vramtrace::viewer::TimeRange> range);
  void hovered(qint64 ns);
  void window_wanted(const std::vector<std::int64_t>& column_edges);
  // The "role" level is shown and no sweep has come: ask the controller for one.
  void roles_wanted();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  void paint_layers(QPainter& painter, const QRect& plot,
                    const std::vector<TimelineColumn>& columns, std::uint64_t top_bytes) const;
  void paint_markers(QPainter& painter, const QRect& plot) const;
  void paint_axes(QPainter& painter, const QRect& plot, std::uint64_t top_bytes) const;
  void paint_legend(QPainter& painter, const QRect& plot) const;
  void paint_hover(QPainter& painter, const QRect& plot) const;
  // After the view moved: asks for the exact series when zoomed in past the buckets.
  void ask_for_window();
  QString zoom_note() const;
  // stacked_ anew from the overview (or the role sweep) at level_.
  void restack();
  QColor color_of(std::size_t layer) const;
  double plot_x(std::int64_t ns) const;
  std::int64_t time_at(int widget_x) const;

  std::shared_ptr<const TraceOverview> overview_;
  double bucket_ns_ = 1;  // of the time index's buckets (exact_zoom.h)
  std::shared_ptr<const std::vector<OomFlag>> ooms_;
  std::string level_ = "segment";
  StackedTimeline stacked_;
  std::shared_ptr<const ZoomedTimeline> zoomed_;
  StackedTimeline zoomed_stacked_;  // zoomed_'s series at level_, when exact
  std::vector<std::int64_t> asked_edges_;
  std::shared_ptr<const analysis::RoleSweep> roles_;
  // The role sweep bucketed over the visible columns, and the edges it was bucketed over.
  mutable StackedTimeline role_columns_;
  mutable std::vector<std::int64_t> role_edges_;
  TimeAxis axis_;
  std::optional<TimeRange> selection_;
  std::optional<std::int64_t> cursor_ns_;

  enum class Drag { kNone, kPan, kSelect };
  Drag drag_ = Drag::kNone;
  int drag_last_x_ = 0;
  std::int64_t select_from_ns_ = 0;
  int press_x_ = 0;

  // The time under the mouse: a time, not a pixel, so that the answer about it (groups_) still
  // matches after the widget was resized.
  std::optional<std::int64_t> hover_ns_;
  std::int64_t groups_ns_ = 0;
  std::shared_ptr<const std::vector<analysis::LeakGroup>> groups_;
};

}  // namespace vramtrace::viewer
