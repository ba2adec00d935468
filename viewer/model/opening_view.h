// Where the viewer opens a trace: at the level a person asks about first (a caching allocator's
// blocks, the program's tensors, where the trace has them) and on the span where that level is
// busy, so that a PyTorch program's training loop fills the window instead of the sliver that
// its start-up (import torch, the model made, the first kernels loaded) leaves it. A double click
// shows the whole trace.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/time/timeline.h"

namespace vramtrace::viewer {

struct OpeningView {
  std::string level;  // "block" where the trace has blocks, else its first level
  std::int64_t start_ns = 0, end_ns = 0;
};

// The start-up left out is the stretch before the level's longest quiet spell (no bucket whose
// bytes change) when that spell is at least a quarter of the trace and what comes before it a
// tenth at most of the buckets that change: then the span starts a little before the spell's
// end. Otherwise, and for a trace without blocks, the whole trace.
OpeningView opening_view(const analysis::Timeline& timeline);

}  // namespace vramtrace::viewer
