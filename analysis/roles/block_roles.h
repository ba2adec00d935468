// Where a PyTorch process's memory went, by role: each live block (tensor) of its caching
// allocator as a parameter (or buffer), a gradient, optimizer state, an activation (made in
// forward, alive into backward), a temporary (made and freed within one phase), or unknown.
// PyTorch's MemTracker answers the same question from inside the process; this answers it
// from an unmodified run's trace, by rules over what every block carries: its stack (native
// and Python), its thread (backward runs on the autograd engine's `pt_autograd_N`), its life
// and the markers around it. The rules are documented in docs/architecture.md ("Roles").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/roles/training_phases.h"
#include "analysis/scope/process_filter.h"
#include "analysis/time/moment.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

enum class BlockRole {
  kParameter,
  kGradient,
  kOptimizerState,
  kActivation,
  kTemporary,
  kUnknown,
};
inline constexpr std::size_t kBlockRoles = 6;
// "parameter", "gradient", "optimizer_state", "activation", "temporary", "unknown".
std::string_view block_role_name(BlockRole role);

struct RoleTotals {
  std::array<std::uint64_t, kBlockRoles> bytes{}, count{};
  std::uint64_t total_bytes() const;
  void add(BlockRole role, std::uint64_t size);
};

// Where a role's live bytes were made: the user's Python line of their stacks
// (callsite_tree.h's user_python_frame), else their innermost frame.
struct RoleSite {
  std::string where;  // "Block.forward at model.py:40"
  std::uint64_t bytes = 0, count = 0;
};

struct ProcessRoles {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::optional<int> world_size;        // its distributed job's, as the process recorded it
  std::uint64_t seq = 0;                // the live blocks just after this event
  std::optional<std::int64_t> time_ns;  // when
  RoleTotals live;
  std::vector<RoleSite> activation_sites;  // the live activations by site, largest first
  // Of the live activations and temporaries, the bytes of torch's cuBLAS workspaces, which
  // stay the same whatever the batch.
  std::uint64_t workspace_bytes = 0;
  bool autocast_seen = false;  // a live block's stack runs through torch.autocast or torch.amp
  std::string optimizer;       // the optimizer whose state is live ("Adam"); empty: none seen
};

// One block's life and role: what a view over time (the viewer's timeline by role) needs.
struct BlockLife {
  std::uint64_t alloc_seq = 0;
  std::uint64_t free_seq = 0;  // UINT64_MAX: never freed
  std::int64_t alloc_ns = 0;
  std::optional<std::int64_t> free_ns;
  int device = 0;
  std::uint64_t size = 0;
  BlockRole role = BlockRole::kUnknown;
};

// Every successful block of process `upid`, in the order made, with its role. One pass over
// the process's blocks; each distinct stack is read once.
std::vector<BlockLife> block_lives(const storage::TraceReader& trace, std::int64_t upid);

// The roles of the blocks live at `moment` in each selected process that has allocator
// events (a process without blocks has no roles and is left out). `peak` is the moment of the
// most bytes in live blocks (max_memory_allocated's), not of device memory in use.
// `phases`, where given, is the trace's (a caller that also asks for growth reads the blocks
// once).
std::vector<ProcessRoles> build_role_report(const storage::TraceReader& trace,
                                            const storage::TimeIndex& index,
                                            const MomentSpec& moment,
                                            const ProcessSelection& processes,
                                            TrainingPhases* phases = nullptr);

}  // namespace vramtrace::analysis
