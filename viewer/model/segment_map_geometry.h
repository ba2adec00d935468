// The fragmentation map's geometry: each segment of analysis::Fragmentation a bar over its
// address range, one row per segment, all at one scale (the largest segment spans the width),
// so that sizes compare across rows; each block a rectangle over its addresses in its row.
//
// Block states, as the map colours them:
//   used    a live block (a tensor); its requested part is drawn apart from the rounding
//   free    bytes between live blocks of a segment that holds some: the fragmentation
//   cached  a segment with no live block at all: what torch.cuda.empty_cache() would release
#pragma once

#include <QPointF>
#include <QRectF>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/allocator/fragmentation.h"

namespace vramtrace::viewer {

enum class BlockState { kUsed, kFree, kCached };

struct BlockRect {
  std::size_t segment = 0, block = 0;  // indices into Fragmentation::segments and its blocks
  BlockState state = BlockState::kFree;
  QRectF rect;
  // A used block whose requested size is known: the width of the requested part, from the left
  // edge (the rest is the allocator's rounding).
  std::optional<double> requested_width;
};

class SegmentMapGeometry {
 public:
  // A block is drawn (and hit) at least this wide, so a tensor of 512 bytes in a 2 GiB segment
  // is still there to see and to point at.
  static constexpr double kMinBlockWidth = 2;

  SegmentMapGeometry() = default;
  SegmentMapGeometry(const analysis::Fragmentation& layout, double width, double row_height,
                     double row_gap);

  const std::vector<QRectF>& bars() const { return bars_; }  // per segment
  const std::vector<BlockRect>& blocks() const { return blocks_; }
  double height() const { return height_; }
  double bytes_per_pixel() const { return bytes_per_pixel_; }

  // x of an address inside segment `segment`'s bar.
  double x_of(std::size_t segment, std::uint64_t address) const;
  // The block under a point, if any; a used block (at least kMinBlockWidth wide) before the free
  // space around it.
  const BlockRect* block_at(QPointF point) const;

 private:
  std::vector<std::uint64_t> segment_addresses_;
  std::vector<QRectF> bars_;
  std::vector<BlockRect> blocks_;
  double height_ = 0, bytes_per_pixel_ = 1;
};

}  // namespace vramtrace::viewer
