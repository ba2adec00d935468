// The fragmentation map's picture: one bar per allocator segment over its address range, blocks
// coloured used, free or cached (segment_map_geometry.h), the requested part of a used block
// darker than its rounding. Hover for a block's address, sizes and state.
#pragma once

#include <QWidget>
#include <memory>

#include "analysis/allocator/fragmentation.h"
#include "viewer/model/segment_map_geometry.h"

namespace vramtrace::viewer {

class SegmentMapWidget : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRowHeight = 22, kRowGap = 6, kLabelWidth = 200;

  explicit SegmentMapWidget(QWidget* parent = nullptr);

  void set_report(std::shared_ptr<const analysis::FragmentationReport> report);
  const SegmentMapGeometry& geometry() const { return geometry_; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void lay_out();

  std::shared_ptr<const analysis::FragmentationReport> report_;
  SegmentMapGeometry geometry_;
};

}  // namespace vramtrace::viewer
