#include "viewer/widgets/segment_map_widget.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "viewer/model/frame_text.h"
#include "viewer/widgets/view_colors.h"

namespace vramtrace::viewer {
namespace {

QString state_name(BlockState state) {
  switch (state) {
    case BlockState::kUsed:
      return QObject::tr("used (a live block)");
    case BlockState::kFree:
      return QObject::tr("free, between live blocks");
    case BlockState::kCached:
      return QObject::tr("cached: a segment with no live block");
  }
  return {};
}

}  // namespace

SegmentMapWidget::SegmentMapWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
}

void SegmentMapWidget::set_report(std::shared_ptr<const analysis::FragmentationReport> report) {
  report_ = std::move(report);
  lay_out();
  update();
}

void SegmentMapWidget::lay_out() {
  geometry_ = report_ ? SegmentMapGeometry(report_->layout, std::max(1, width() - kLabelWidth - 8),
                                           kRowHeight, kRowGap)
                      : SegmentMapGeometry();
  setMinimumHeight(static_cast<int>(geometry_.height()) + 4);
}

void SegmentMapWidget::resizeEvent(QResizeEvent*) {
  lay_out();
}

void SegmentMapWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  if (!report_) return;
  if (report_->layout.segments.empty()) {
    painter.drawText(rect(), Qt::AlignCenter,
                     report_->allocator_events
                         ? tr("No allocator segment was live at this moment")
                         : tr("This process has no caching allocator events: no segments to map"));
    return;
  }
  painter.translate(kLabelWidth, 2);
  const auto& segments = report_->layout.segments;
  for (std::size_t s = 0; s < geometry_.bars().size(); ++s) {
    const QRectF bar = geometry_.bars()[s];
    painter.setPen(palette().text().color());
    painter.drawText(QRectF(-kLabelWidth, bar.top(), kLabelWidth - 6, bar.height()),
                     Qt::AlignRight | Qt::AlignVCenter,
                     QStringLiteral("0x%1 %2%3")
                         .arg(segments[s].address, 0, 16)
                         .arg(byte_text(segments[s].size))
                         .arg(segments[s].expandable ? QStringLiteral(" (exp.)") : QString()));
  }
  // Used blocks last, so that a tensor narrower than a pixel is never covered by the free
  // space around it; edges only between blocks wide enough to show one.
  for (const bool used : {false, true}) {
    for (const BlockRect& block : geometry_.blocks()) {
      if ((block.state == BlockState::kUsed) != used) continue;
      QRectF area = block.rect;
      area.setWidth(std::max(area.width(), SegmentMapGeometry::kMinBlockWidth));
      painter.fillRect(area, block_color(block.state));
      if (block.requested_width) {
        // The rounding is what the lighter rest of the block shows.
        painter.fillRect(QRectF(area.left(), area.top() + area.height() / 3,
                                std::max(1.0, *block.requested_width), area.height() / 3),
                         requested_color());
      }
      if (area.width() >= 4) {
        painter.setPen(QPen(palette().base().color(), 0));
        painter.drawLine(area.topLeft(), area.bottomLeft());
      }
    }
  }
  painter.setPen(palette().text().color());
  for (const QRectF& bar : geometry_.bars()) painter.drawRect(bar);
}

bool SegmentMapWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip && report_) {
    const auto* help = static_cast<QHelpEvent*>(event);
    const BlockRect* block = geometry_.block_at(QPointF(help->pos()) - QPointF(kLabelWidth, 2));
    if (block == nullptr) {
      QToolTip::hideText();
      return true;
    }
    const analysis::SegmentBlock& b = report_->layout.segments[block->segment].blocks[block->block];
    QString text = tr("0x%1: %2, %3")
                       .arg(b.address, 0, 16)
                       .arg(byte_text(b.size))
                       .arg(state_name(block->state));
    if (b.requested)
      text += tr("\nrequested %1, rounding %2")
                  .arg(byte_text(*b.requested))
                  .arg(byte_text(b.size - *b.requested));
    QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(event);
}

}  // namespace vramtrace::viewer
