#include "viewer/model/flame_graph_layout.h"

#include <algorithm>

namespace vramtrace::viewer {
namespace {

void lay_out(const std::vector<analysis::CallsiteNode>& nodes, int depth, double x,
             double bytes_to_width, std::vector<FlameBox>* boxes) {
  for (const analysis::CallsiteNode& node : nodes) {
    const double width = static_cast<double>(node.bytes) * bytes_to_width;
    boxes->push_back({&node, depth, x, width});
    lay_out(node.children, depth + 1, x, bytes_to_width, boxes);
    x += width;
  }
}

}  // namespace

std::vector<FlameBox> lay_out_flame_graph(const std::vector<analysis::CallsiteNode>& roots) {
  std::uint64_t total = 0;
  for (const analysis::CallsiteNode& root : roots) total += root.bytes;
  std::vector<FlameBox> boxes;
  if (total == 0) return boxes;
  lay_out(roots, 0, 0.0, 1.0 / static_cast<double>(total), &boxes);
  return boxes;
}

const FlameBox* flame_box_at(const std::vector<FlameBox>& boxes, double x, int depth) {
  for (const FlameBox& box : boxes)
    if (box.depth == depth && x >= box.x && x < box.x + box.width) return &box;
  return nullptr;
}

int flame_graph_depth(const std::vector<FlameBox>& boxes) {
  int depth = 0;
  for (const FlameBox& box : boxes) depth = std::max(depth, box.depth + 1);
  return depth;
}

}  // namespace vramtrace::viewer
