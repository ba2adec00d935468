#include "viewer/widgets/view_colors.h"

#include <array>

namespace vramtrace::viewer {

QColor layer_color(std::size_t layer) {
  // Qualitative colours that stay apart when stacked (ColorBrewer "Set2").
  static constexpr std::array<QRgb, 8> kColors{0x66c2a5, 0xfc8d62, 0x8da0cb, 0xe78ac3,
                                               0xa6d854, 0xffd92f, 0xe5c494, 0xb3b3b3};
  return QColor::fromRgb(kColors[layer % kColors.size()]);
}

QColor role_color(int role) {
  // parameter, gradient, optimizer_state, activation, temporary, unknown (ColorBrewer "Dark2"
  // and a grey for unknown): apart from one another when stacked.
  static constexpr std::array<QRgb, 6> kColors{0x1b9e77, 0xd95f02, 0x7570b3,
                                               0xe7298a, 0xe6ab02, 0x999999};
  return QColor::fromRgb(kColors[static_cast<std::size_t>(role) % kColors.size()]);
}

QColor block_color(BlockState state) {
  switch (state) {
    case BlockState::kUsed:
      return QColor(0x3b, 0x7d, 0xd8);
    case BlockState::kFree:
      return QColor(0xf2, 0xa3, 0x3a);
    case BlockState::kCached:
      return QColor(0xc8, 0xc8, 0xc8);
  }
  return Qt::black;
}

QColor requested_color() {
  return QColor(0x1d, 0x4e, 0x9a);
}

QColor marker_color(const std::optional<std::uint32_t>& argb, int depth) {
  QColor color = argb ? QColor::fromRgb(*argb & 0xffffffu) : QColor(0x7a, 0x5c, 0xb8);
  color.setAlpha(depth == 0 ? 70 : 50);
  return color;
}

QColor oom_color() {
  return QColor(0xd6, 0x27, 0x28);
}

QColor selection_color() {
  return QColor(0x3b, 0x7d, 0xd8, 50);
}

QColor flame_color(std::size_t depth, std::size_t index) {
  // Warm hues, varied by depth and position so that neighbours differ.
  return QColor::fromHsv(static_cast<int>((20 + depth * 7 + index * 13) % 50), 150, 235);
}

}  // namespace vramtrace::viewer
