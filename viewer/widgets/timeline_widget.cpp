#include "viewer/widgets/timeline_widget.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "viewer/model/axis_ticks.h"
#include "viewer/model/frame_text.h"
#include "viewer/model/marker_layout.h"
#include "viewer/model/opening_view.h"
#include "viewer/widgets/view_colors.h"

namespace vramtrace::viewer {
namespace {

constexpr int kLeftMargin = 72;    // byte labels
constexpr int kBottomMargin = 22;  // time labels
constexpr int kBandHeight = 14;    // one row of marker bands
constexpr int kBandRows = 3;       // nesting depths shown
constexpr int kRightMargin = 8;
constexpr int kRoleLegendBuckets = 1024;  // the whole trace's role buckets, for the peaks

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(200);
  setFocusPolicy(Qt::WheelFocus);
}

QRect TimelineWidget::plot_rect() const {
  return QRect(kLeftMargin, kBandHeight * kBandRows + 4,
               std::max(1, width() - kLeftMargin - kRightMargin),
               std::max(1, height() - kBandHeight * kBandRows - 4 - kBottomMargin));
}

void TimelineWidget::set_overview(std::shared_ptr<const TraceOverview> overview) {
  const bool same_trace = overview_ && overview && overview_->path == overview->path;
  overview_ = std::move(overview);
  if (!overview_) return;
  bucket_ns_ = index_bucket_ns(overview_->timeline);
  const OpeningView opening = opening_view(overview_->timeline);
  if (!same_trace && !by_role()) level_ = opening.level;
  const std::vector<std::string> levels = StackedTimeline::levels_of(overview_->timeline);
  const bool has_blocks = std::find(levels.begin(), levels.end(), "block") != levels.end();
  if (by_role()
          ? !has_blocks
          : !levels.empty() && std::find(levels.begin(), levels.end(), level_) == levels.end())
    level_ = levels.empty() ? std::string("segment") : levels.front();
  if (!same_trace) roles_.reset();
  restack();
  if (same_trace) {
    axis_.set_trace_range(overview_->timeline.start_ns, overview_->timeline.end_ns);
  } else {
    axis_ = TimeAxis(overview_->timeline.start_ns, overview_->timeline.end_ns, plot_rect().width());
    axis_.show(opening.start_ns, opening.end_ns);
    selection_.reset();
    cursor_ns_.reset();
    groups_.reset();
    ooms_.reset();
  }
  // Live mode's new events may fall in the window: ask again.
  zoomed_.reset();
  asked_edges_.clear();
  ask_for_window();
  update();
}

void TimelineWidget::set_level(const std::string& level) {
  level_ = level;
  restack();
  if (zoomed_ && zoomed_->window.exact)
    zoomed_stacked_ = StackedTimeline(zoomed_->window.timeline, level_);
  if (by_role() && !roles_) emit roles_wanted();
  ask_for_window();
  update();
}

void TimelineWidget::set_roles(std::shared_ptr<const analysis::RoleSweep> roles) {
  roles_ = std::move(roles);
  restack();
  update();
}

void TimelineWidget::restack() {
  role_edges_.clear();
  role_columns_ = StackedTimeline();
  if (!overview_) return;
  if (!by_role()) {
    stacked_ = StackedTimeline(overview_->timeline, level_);
    return;
  }
  if (!roles_) {
    stacked_ = StackedTimeline();
    return;
  }
  const std::int64_t start = overview_->timeline.start_ns, end = overview_->timeline.end_ns;
  std::vector<std::int64_t> edges;
  for (int b = 0; b <= kRoleLegendBuckets; ++b)
    edges.push_back(start + (end - start) * b / kRoleLegendBuckets + (b == kRoleLegendBuckets));
  stacked_ = StackedTimeline(analysis::role_timeline(*roles_, edges), "role");
}

QColor TimelineWidget::color_of(std::size_t layer) const {
  return by_role() ? role_color(stacked_.layers()[layer].kind) : layer_color(layer);
}

void TimelineWidget::set_zoomed_timeline(std::shared_ptr<const ZoomedTimeline> zoomed) {
  zoomed_ = std::move(zoomed);
  zoomed_stacked_ = zoomed_ && zoomed_->window.exact
                        ? StackedTimeline(zoomed_->window.timeline, level_)
                        : StackedTimeline();
  update();
}

const StackedTimeline& TimelineWidget::drawn() const {
  if (by_role() && roles_) {
    // Re-bucketed for each view: the steps in view, never the trace.
    std::vector<std::int64_t> edges = column_edges(axis_);
    if (edges != role_edges_) {
      role_columns_ = StackedTimeline(analysis::role_timeline(*roles_, edges), "role");
      role_edges_ = std::move(edges);
    }
    return role_columns_;
  }
  if (zoomed_ && zoomed_->window.exact && wants_exact_window(axis_, bucket_ns_) &&
      zoomed_->edges == column_edges(axis_))
    return zoomed_stacked_;
  return stacked_;
}

void TimelineWidget::ask_for_window() {
  if (!overview_ || by_role() || stacked_.empty() || !wants_exact_window(axis_, bucket_ns_)) return;
  std::vector<std::int64_t> edges = column_edges(axis_);
  if (edges == asked_edges_) return;
  asked_edges_ = edges;
  emit window_wanted(edges);
}

QString TimelineWidget::zoom_note() const {
  if (by_role()) {
    return roles_ ? tr("by role: pid %1's %2 blocks, exact from each block's life")
                        .arg(roles_->pid)
                        .arg(roles_->blocks)
                  : QString();
  }
  if (!wants_exact_window(axis_, bucket_ns_)) return {};
  if (drawn_exact()) {
    return tr("exact: from the %1 allocation events in view").arg(zoomed_->window.events);
  }
  if (zoomed_ && !zoomed_->window.exact && zoomed_->edges == column_edges(axis_)) {
    if (zoomed_->window.why_not == analysis::TimelineWindow::WhyNot::kUnindexedTrace) {
      return tr(
          "from the time index's buckets: this trace has no sequence indexes (unfinished), "
          "and finding the events in view would read all of its allocations");
    }
    return tr("from the time index's buckets: more than %1 events in view, zoom in for the exact "
              "series")
        .arg(analysis::kMaxWindowEvents);
  }
  return tr("from the time index's buckets until the exact series comes");
}

void TimelineWidget::set_ooms(std::shared_ptr<const std::vector<OomFlag>> ooms) {
  ooms_ = std::move(ooms);
  update();
}

void TimelineWidget::set_live_groups(
    std::int64_t ns, std::shared_ptr<const std::vector<analysis::LeakGroup>> groups) {
  groups_ns_ = ns;
  groups_ = std::move(groups);
  update();
}

void TimelineWidget::set_selection(std::optional<TimeRange> range) {
  selection_ = range;
  update();
  emit selection_changed(selection_);
}

void TimelineWidget::set_cursor(std::optional<std::int64_t> ns) {
  cursor_ns_ = ns;
  update();
}

double TimelineWidget::plot_x(std::int64_t ns) const {
  return plot_rect().left() + axis_.x_of(ns);
}

std::int64_t TimelineWidget::time_at(int widget_x) const {
  return axis_.ns_at(widget_x - plot_rect().left());
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  axis_.set_width(plot_rect().width());
  ask_for_window();
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  const QRect plot = plot_rect();
  if (!overview_) {
    painter.drawText(rect(), Qt::AlignCenter, tr("Open a trace (File > Open)"));
    return;
  }
  if (stacked_.empty()) {
    painter.drawText(plot, Qt::AlignCenter,
                     !by_role() ? tr("No memory was allocated in this trace")
                     : roles_   ? tr("This process made no blocks")
                                : tr("Reading the roles of the process's blocks..."));
    return;
  }
  std::uint64_t top = 1;
  const std::vector<TimelineColumn> columns = drawn().columns(axis_);
  for (const TimelineColumn& column : columns) top = std::max(top, column.top_bytes);
  top += top / 20;  // headroom above the highest column

  painter.save();
  painter.setClipRect(plot);
  paint_layers(painter, plot, columns, top);
  if (selection_) {
    const double from = plot_x(selection_->from_ns), to = plot_x(selection_->to_ns);
    painter.fillRect(QRectF(from, plot.top(), std::max(1.0, to - from), plot.height()),
                     selection_color());
  }
  if (cursor_ns_) {
    painter.setPen(QPen(palette().text().color(), 1, Qt::DashLine));
    const double x = plot_x(*cursor_ns_);
    painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  }
  painter.restore();
  paint_markers(painter, plot);
  paint_axes(painter, plot, top);
  paint_legend(painter, plot);
  paint_hover(painter, plot);
}

void TimelineWidget::paint_layers(QPainter& painter, const QRect& plot,
                                  const std::vector<TimelineColumn>& columns,
                                  std::uint64_t top_bytes) const {
  const double scale = plot.height() / static_cast<double>(top_bytes);
  for (std::size_t x = 0; x < columns.size(); ++x) {
    // Each layer's band spans its max, stacked on the layers below; within the band, the part
    // above the layer's min is lighter, so a column that rose and fell shows its range.
    double base = plot.bottom() + 1;
    const double px = plot.left() + static_cast<double>(x) + 0.5;
    for (std::size_t l = 0; l < columns[x].max_bytes.size(); ++l) {
      const double high = static_cast<double>(columns[x].max_bytes[l]) * scale;
      const double low = static_cast<double>(columns[x].min_bytes[l]) * scale;
      if (high <= 0 || !stacked_.layers()[l].stacked) continue;
      const QColor color = color_of(l);
      painter.setPen(QPen(color, 1));
      painter.drawLine(QPointF(px, base), QPointF(px, base - low));
      painter.setPen(QPen(color.lighter(125), 1));
      painter.drawLine(QPointF(px, base - low), QPointF(px, base - high));
      base -= high;
    }
  }
  // Unstacked layers: their max as a line from 0, over the stack.
  for (std::size_t l = 0; l < stacked_.layers().size(); ++l) {
    if (stacked_.layers()[l].stacked) continue;
    QPolygonF line;
    for (std::size_t x = 0; x < columns.size(); ++x) {
      const double y = plot.bottom() + 1 - static_cast<double>(columns[x].max_bytes[l]) * scale;
      line << QPointF(plot.left() + static_cast<double>(x), y)
           << QPointF(plot.left() + static_cast<double>(x) + 1, y);
    }
    painter.setPen(QPen(color_of(l).darker(130), 2));
    painter.drawPolyline(line);
  }
}

void TimelineWidget::paint_markers(QPainter& painter, const QRect& plot) const {
  painter.save();
  painter.setClipRect(QRect(plot.left(), 0, plot.width(), height()));
  const QFontMetricsF metrics(painter.font());
  const MarkerLayout layout = lay_out_markers(overview_->markers, axis_, kBandRows);
  for (const MarkerLine& mark : layout.marks) {
    painter.setPen(QPen(marker_color(mark.marker->color, 0).darker(150), 1, Qt::DotLine));
    const double x = plot.left() + mark.x;
    painter.drawLine(QPointF(x, 0), QPointF(x, plot.bottom()));
  }
  painter.setPen(palette().text().color());
  for (const MarkerBand& band : layout.bands) {
    const QRectF area(plot.left() + band.from_x, band.row * kBandHeight + 1,
                      band.to_x - band.from_x, kBandHeight - 2);
    painter.fillRect(area, marker_color(band.marker->color, band.row));
    const QString label = band_label(band, QString::fromStdString(band.marker->name), metrics);
    if (!label.isEmpty())
      painter.drawText(area.adjusted(kBandLabelMargin, 0, -kBandLabelMargin, 0),
                       Qt::AlignLeft | Qt::AlignVCenter, label);
  }
  for (const OomFlag& oom : ooms_ ? *ooms_ : std::vector<OomFlag>{}) {
    const double x = plot_x(oom.time_ns);
    painter.setPen(QPen(oom_color(), 2));
    painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    const QPolygonF flag{QPointF(x, plot.top()), QPointF(x + 9, plot.top() + 4),
                         QPointF(x, plot.top() + 8)};
    painter.setBrush(oom_color());
    painter.drawPolygon(flag);
  }
  painter.restore();
}

void TimelineWidget::paint_axes(QPainter& painter, const QRect& plot,
                                std::uint64_t top_bytes) const {
  painter.setPen(palette().text().color());
  painter.drawRect(plot.adjusted(0, 0, -1, -1));
  // Round values on both axes (model/axis_ticks.h): bytes by powers of two, times from the
  // trace's start by 1, 2 or 5 times a power of ten.
  for (const std::uint64_t bytes :
       multiples_between(0, top_bytes, power_of_two_step(top_bytes, 5))) {
    const int y = plot.bottom() -
                  static_cast<int>(
                      std::lround(static_cast<double>(plot.height()) * static_cast<double>(bytes) /
                                  static_cast<double>(std::max<std::uint64_t>(top_bytes, 1))));
    painter.drawLine(plot.left() - 4, y, plot.left(), y);
    painter.drawText(QRect(0, y - 8, kLeftMargin - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                     byte_tick_text(bytes));
  }
  const std::int64_t origin = axis_.trace_start_ns();
  const auto from = static_cast<std::uint64_t>(axis_.visible_start_ns() - origin);
  const auto to = static_cast<std::uint64_t>(axis_.visible_end_ns() - origin);
  const int most_ticks = std::max(2, plot.width() / 120);
  for (const std::uint64_t since_start :
       multiples_between(from, to, decimal_step(to - from, most_ticks))) {
    const std::int64_t ns = origin + static_cast<std::int64_t>(since_start);
    const int x = plot.left() + static_cast<int>(std::lround(axis_.x_of(ns)));
    painter.drawLine(x, plot.bottom(), x, plot.bottom() + 4);
    const QString text = time_tick_text(ns, origin);
    const int w = painter.fontMetrics().horizontalAdvance(text);
    // Centred on its tick, but never past the plot's ends.
    const int left = std::clamp(x - w / 2, plot.left(), std::max(plot.left(), plot.right() - w));
    painter.drawText(QRect(left, plot.bottom() + 4, w + 2, kBottomMargin - 4),
                     Qt::AlignLeft | Qt::AlignTop, text);
  }
}

QStringList TimelineWidget::legend_text() const {
  QStringList lines;
  for (const TimelineLayer& layer : stacked_.layers()) {
    if (by_role()) {
      lines << tr("pid %1 device %2 %3, peak %4")
                   .arg(roles_ ? roles_->pid : 0)
                   .arg(layer.device)
                   .arg(QString::fromStdString(layer.kind_name))
                   .arg(byte_text(layer.peak_bytes));
      continue;
    }
    lines << tr("device %1 %2 (%3 level%4), peak %5")
                 .arg(layer.device)
                 .arg(QString::fromStdString(layer.kind_name))
                 .arg(QString::fromStdString(layer.level))
                 .arg(layer.stacked ? QString() : tr(", a line: not stacked"))
                 .arg(byte_text(layer.peak_bytes));
  }
  return lines;
}

void TimelineWidget::paint_legend(QPainter& painter, const QRect& plot) const {
  const QFontMetrics metrics = painter.fontMetrics();
  int y = plot.top() + 4;
  const QStringList lines = legend_text();
  for (qsizetype l = 0; l < lines.size(); ++l) {
    const QString& text = lines[l];
    const int w = metrics.horizontalAdvance(text) + 18;
    const QRect box(plot.right() - w - 4, y, w, metrics.height());
    painter.fillRect(box, QColor(255, 255, 255, 200));
    painter.fillRect(QRect(box.left() + 2, y + 3, 10, metrics.height() - 6),
                     color_of(static_cast<std::size_t>(l)));
    painter.setPen(Qt::black);
    painter.drawText(box.adjusted(16, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, text);
    y += metrics.height() + 1;
  }
}

QStringList TimelineWidget::hover_text() const {
  if (!hover_ns_ || !overview_) return {};
  const std::int64_t ns = *hover_ns_;
  QStringList lines;
  lines << tr("at %1").arg(time_text(ns, axis_.trace_start_ns()));
  const std::vector<std::uint64_t> bytes = drawn().bytes_at(ns);
  std::uint64_t stacked_total = 0;
  for (std::size_t l = 0; l < bytes.size(); ++l) {
    const TimelineLayer& layer = stacked_.layers()[l];
    if (layer.stacked) stacked_total += bytes[l];
    lines << tr("device %1 %2: %3%4")
                 .arg(layer.device)
                 .arg(QString::fromStdString(layer.kind_name))
                 .arg(byte_text(bytes[l]))
                 .arg(layer.stacked ? QString() : tr(" (not in the total)"));
  }
  lines << tr("total: %1").arg(byte_text(stacked_total));
  if (const QString note = zoom_note(); !note.isEmpty()) lines << note;
  if (groups_ && groups_ns_ == ns) {
    lines << tr("live then, largest callsites:");
    for (const analysis::LeakGroup& group : *groups_) {
      const QString where = stack_label(group.stack);
      lines << QStringLiteral("  %1  %2").arg(byte_text(group.bytes), where);
    }
  }
  return lines;
}

void TimelineWidget::paint_hover(QPainter& painter, const QRect& plot) const {
  if (!hover_ns_ || drag_ != Drag::kNone) return;
  const std::int64_t ns = *hover_ns_;
  const int hover_x = static_cast<int>(std::lround(plot_x(ns)));
  painter.setPen(QPen(palette().text().color(), 1));
  painter.drawLine(hover_x, plot.top(), hover_x, plot.bottom());

  const QStringList lines = hover_text();
  const QFontMetrics metrics = painter.fontMetrics();
  int w = 0;
  for (const QString& line : lines) w = std::max(w, metrics.horizontalAdvance(line));
  QRect box(0, 0, w + 12, static_cast<int>(lines.size()) * metrics.height() + 8);
  box.moveTopLeft(QPoint(hover_x + 12, plot.top() + 8));
  if (box.right() > plot.right()) box.moveRight(hover_x - 12);
  painter.fillRect(box, QColor(255, 255, 240, 235));
  painter.setPen(Qt::black);
  painter.drawRect(box);
  painter.drawText(box.adjusted(6, 4, -6, -4), Qt::AlignLeft | Qt::AlignTop, lines.join('\n'));
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  if (!overview_) return;
  const double factor = std::pow(1.0015, event->angleDelta().y());
  axis_.zoom(factor, event->position().x() - plot_rect().left());
  ask_for_window();
  update();
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  if (!overview_ || event->button() != Qt::LeftButton) return;
  const int x = static_cast<int>(event->position().x());
  press_x_ = drag_last_x_ = x;
  if (event->modifiers() & Qt::ShiftModifier) {
    drag_ = Drag::kSelect;
    select_from_ns_ = time_at(x);
  } else {
    drag_ = Drag::kPan;
  }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  const int x = static_cast<int>(event->position().x());
  if (drag_ == Drag::kPan) {
    axis_.pan(drag_last_x_ - x);
    drag_last_x_ = x;
    ask_for_window();
  } else if (drag_ == Drag::kSelect) {
    const std::int64_t at = time_at(x);
    selection_ = TimeRange{std::min(select_from_ns_, at), std::max(select_from_ns_, at)};
  } else if (overview_ && plot_rect().contains(event->position().toPoint())) {
    hover_ns_ = time_at(x);
    emit hovered(time_at(x));
  }
  update();
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const int x = static_cast<int>(event->position().x());
  const Drag ended = drag_;
  drag_ = Drag::kNone;
  if (ended == Drag::kSelect) {
    if (std::abs(x - press_x_) < 3) {
      set_selection(std::nullopt);
    } else {
      const std::int64_t at = time_at(x);
      set_selection(TimeRange{std::min(select_from_ns_, at), std::max(select_from_ns_, at)});
    }
  }
  update();
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent*) {
  axis_.show(axis_.trace_start_ns(), axis_.trace_end_ns());
  ask_for_window();
  update();
}

void TimelineWidget::leaveEvent(QEvent*) {
  hover_ns_.reset();
  update();
}

}  // namespace vramtrace::viewer
