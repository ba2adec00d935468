// The viewer's colours, in one place so that a layer, a block state or a marker has the same
// colour in every view and in the legends.
#pragma once

#include <QColor>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "viewer/model/segment_map_geometry.h"

namespace vramtrace::viewer {

QColor layer_color(std::size_t layer);
// A block role's (analysis::BlockRole, by index), the same in every view.
QColor role_color(int role);
QColor block_color(BlockState state);
QColor requested_color();  // the requested part of a used block, drawn over its rounded size
QColor marker_color(const std::optional<std::uint32_t>& argb, int depth);
QColor oom_color();
QColor selection_color();
QColor flame_color(std::size_t depth, std::size_t index);

}  // namespace vramtrace::viewer
