#include "viewer/widgets/flame_graph_widget.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "viewer/model/frame_text.h"
#include "viewer/widgets/view_colors.h"

namespace vramtrace::viewer {

FlameGraphWidget::FlameGraphWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
}

void FlameGraphWidget::set_roots(std::vector<analysis::CallsiteNode> top_down) {
  roots_ = std::move(top_down);
  boxes_ = lay_out_flame_graph(roots_);
  total_bytes_ = 0;
  for (const analysis::CallsiteNode& root : roots_) total_bytes_ += root.bytes;
  setMinimumHeight(flame_graph_depth(boxes_) * kRowHeight + 2);
  update();
}

void FlameGraphWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  if (boxes_.empty()) {
    painter.drawText(rect(), Qt::AlignCenter, tr("Nothing live in this selection"));
    return;
  }
  const QFontMetrics metrics = painter.fontMetrics();
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    const FlameBox& box = boxes_[i];
    const QRectF area(box.x * width(), box.depth * kRowHeight, box.width * width(), kRowHeight - 1);
    painter.fillRect(area.adjusted(0, 0, -1, 0),
                     flame_color(static_cast<std::size_t>(box.depth), i));
    const QString label = frame_label(box.node->frame);
    if (area.width() > metrics.horizontalAdvance(QStringLiteral("MMM"))) {
      painter.setPen(Qt::black);
      painter.drawText(
          area.adjusted(3, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
          metrics.elidedText(label, Qt::ElideRight, static_cast<int>(area.width()) - 6));
    }
  }
}

bool FlameGraphWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(event);
    const FlameBox* box =
        flame_box_at(boxes_, static_cast<double>(help->pos().x()) / std::max(1, width()),
                     help->pos().y() / kRowHeight);
    if (box == nullptr) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(),
                         tr("%1\n%2, %3 % of the selection")
                             .arg(frame_label(box->node->frame))
                             .arg(bytes_in_allocations(box->node->bytes, box->node->count))
                             .arg(box->width * 100, 0, 'f', 1),
                         this);
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace vramtrace::viewer
