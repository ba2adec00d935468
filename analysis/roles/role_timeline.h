// A PyTorch process's live bytes over time by role (block_roles.h), for the viewer's timeline
// stacked by role. sweep_block_roles walks the process's block lives once, their allocs and
// frees sorted by time, into one step series per (device, role): each event's time and the
// role's live bytes just after it. role_timeline then buckets those steps over any edges (one
// bucket per pixel column of the visible window) without reading the trace again, so zooming
// only re-buckets: a binary search per series and column, plus the steps inside the window.
//
// A bucket's values follow analysis::TimelineBucket's rule, the one the kind stacking draws:
// min and max over the bucket (the bytes live at its start included), last the bytes live at
// its end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/roles/block_roles.h"
#include "analysis/time/timeline.h"

namespace vramtrace::analysis {

struct RoleSteps {
  int device = 0;
  BlockRole role = BlockRole::kUnknown;
  std::vector<std::int64_t> ns;      // each event's time, ascending
  std::vector<std::uint64_t> bytes;  // the role's live bytes just after it
  std::uint64_t peak_bytes = 0;
};

struct RoleSweep {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::size_t blocks = 0;
  std::vector<RoleSteps> series;  // (device, role) order, only those with a block
};

// Ties in time keep the trace's order (alloc and free seqs).
RoleSweep sweep_block_roles(std::span<const BlockLife> lives);

// One series per sweep series (the same order), level "role", kind the role's index, kind_name
// block_role_name; edges.size() - 1 buckets, [edges[i], edges[i + 1]). `edges`: ascending, two
// or more.
Timeline role_timeline(const RoleSweep& sweep, std::span<const std::int64_t> edges);

}  // namespace vramtrace::analysis
