// Advice on a whole trace, as `summary` shows it: the known remedies for GPU memory trouble
// (docs/architecture.md, "Reports"), each behind a rule that fires only on evidence the trace
// holds, with the numbers it fired on (advice.h).
//
// The rules, per selected process (and device where memory is per device):
// - expandable_segments: at the peak of live blocks (tensors), at least a quarter of the
//   allocator's segment bytes cached between them, split into gaps (external fragmentation
//   >= 0.5), and no segment made of cuMemMap mappings (expandable segments not on yet).
// - empty_cache: at the device peak, the allocator held segments with no live block while
//   memory outside the allocator was live on the device (the process's own cudaMalloc, or
//   another selected process on the same device): torch.cuda.empty_cache() would have handed
//   those segments to the other user.
// - activation_checkpointing: at the peak of live blocks, at least a quarter of their bytes
//   were allocated inside a marker range named like "forward" and still held: activations kept
//   for the backward pass.
// - micro_batches: the peak of live blocks falls inside an outermost (iteration) range, and at
//   least half of it was allocated since that range began: memory that grows with the batch.
// - mixed_precision: activation_checkpointing or micro_batches fired, and none of the stacks of
//   the blocks live at the peak runs through torch.autocast / torch.amp.
// - no_grad_in_evaluation: a range named like evaluation ("eval", "valid", "infer", "test")
//   grew live blocks by at least half as much as the largest training (other outermost) range:
//   without torch.no_grad() evaluation keeps activations as training does.
// - pinned_memory: the process held at least 1 GiB of pinned host memory at once.
#pragma once

#include <vector>

#include "analysis/scope/process_filter.h"
#include "analysis/time/trace_peaks.h"
#include "analysis/values/advice.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

inline constexpr std::uint64_t kPinnedMemoryAdviceBytes = 1ull << 30;

// Cost: the peaks (trace_peaks.h: read from the time index where the trace keeps one); for each
// process with tensors (kind block), the live sets at its peaks (process_history.h: memory about
// a live set, not the trace) and, when it has ranges, one pass over its events in sequence
// order; otherwise, and for every other process, its pinned allocations. In upid order; within a
// process, rule by rule in the order listed above (device by device). Every advice's evidence
// starts with "pid", then "device" where the rule is per device. `peaks`: the trace's peaks of the
// same processes (trace_peaks.h), when the caller has them; found here otherwise.
std::vector<Advice> build_trace_advice(const storage::TraceReader& trace,
                                       const ProcessSelection& processes = std::nullopt,
                                       const TracePeaks* peaks = nullptr);

}  // namespace vramtrace::analysis
