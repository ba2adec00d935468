// A flame graph of a top-down callsite tree: one box per node, its width the node's share of
// all bytes, its row the node's depth (roots at row 0), children side by side under their
// parent in the tree's order (largest first). Geometry only, in fractions of the width, so that
// the widget scales it and the tests check it without painting.
#pragma once

#include <cstddef>
#include <vector>

#include "analysis/values/live_callsite_tree.h"

namespace vramtrace::viewer {

struct FlameBox {
  const analysis::CallsiteNode* node = nullptr;
  int depth = 0;
  double x = 0, width = 0;  // fractions of the whole graph's width, [0, 1]
};

// Boxes parent before children (depth-first). `roots` must outlive the boxes.
std::vector<FlameBox> lay_out_flame_graph(const std::vector<analysis::CallsiteNode>& roots);

// The box at `x` (a fraction of the width) in row `depth`; nullptr where there is none.
const FlameBox* flame_box_at(const std::vector<FlameBox>& boxes, double x, int depth);

int flame_graph_depth(const std::vector<FlameBox>& boxes);  // rows: the deepest depth + 1

}  // namespace vramtrace::viewer
