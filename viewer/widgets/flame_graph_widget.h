// A flame graph of the leak tree's selection (top-down: roots on top, callees below), each box
// as wide as its share of the bytes. Hover for a box's callsite, bytes and share.
#pragma once

#include <QWidget>
#include <vector>

#include "viewer/model/flame_graph_layout.h"

namespace vramtrace::viewer {

class FlameGraphWidget : public QWidget {
  Q_OBJECT

 public:
  explicit FlameGraphWidget(QWidget* parent = nullptr);

  void set_roots(std::vector<analysis::CallsiteNode> top_down);
  const std::vector<FlameBox>& boxes() const { return boxes_; }
  static constexpr int kRowHeight = 20;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  std::vector<analysis::CallsiteNode> roots_;
  std::vector<FlameBox> boxes_;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace vramtrace::viewer
