#include "viewer/model/segment_map_geometry.h"

#include <algorithm>

namespace vramtrace::viewer {

SegmentMapGeometry::SegmentMapGeometry(const analysis::Fragmentation& layout, double width,
                                       double row_height, double row_gap) {
  std::uint64_t largest = 1;
  for (const analysis::SegmentLayout& segment : layout.segments)
    largest = std::max(largest, segment.size);
  bytes_per_pixel_ = static_cast<double>(largest) / std::max(width, 1.0);

  double y = 0;
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const analysis::SegmentLayout& segment = layout.segments[s];
    segment_addresses_.push_back(segment.address);
    bars_.emplace_back(0.0, y, static_cast<double>(segment.size) / bytes_per_pixel_, row_height);
    const bool any_used = std::any_of(segment.blocks.begin(), segment.blocks.end(),
                                      [](const analysis::SegmentBlock& b) { return b.used; });
    for (std::size_t b = 0; b < segment.blocks.size(); ++b) {
      const analysis::SegmentBlock& block = segment.blocks[b];
      BlockRect rect;
      rect.segment = s;
      rect.block = b;
      rect.state = block.used ? BlockState::kUsed
                   : any_used ? BlockState::kFree
                              : BlockState::kCached;
      rect.rect = QRectF(x_of(s, block.address), y,
                         static_cast<double>(block.size) / bytes_per_pixel_, row_height);
      if (block.used && block.requested)
        rect.requested_width = static_cast<double>(*block.requested) / bytes_per_pixel_;
      blocks_.push_back(rect);
    }
    y += row_height + row_gap;
  }
  height_ = layout.segments.empty() ? 0 : y - row_gap;
}

double SegmentMapGeometry::x_of(std::size_t segment, std::uint64_t address) const {
  // Addresses below the segment's start are not in its bar: clamp to its left edge.
  const std::uint64_t start = segment_addresses_.at(segment);
  return address <= start ? 0.0 : static_cast<double>(address - start) / bytes_per_pixel_;
}

const BlockRect* SegmentMapGeometry::block_at(QPointF point) const {
  for (const BlockRect& block : blocks_) {
    if (block.state != BlockState::kUsed) continue;
    QRectF drawn = block.rect;
    drawn.setWidth(std::max(drawn.width(), kMinBlockWidth));
    if (drawn.contains(point)) return &block;
  }
  for (const BlockRect& block : blocks_)
    if (block.rect.contains(point)) return &block;
  return nullptr;
}

}  // namespace vramtrace::viewer
