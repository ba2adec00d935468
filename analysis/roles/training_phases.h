// The rhythm of a PyTorch process, read from its tensors in the order made (the blocks of its
// caching allocator; where it has none, because torch hands each tensor to the driver
// (`backend:cudaMallocAsync`, PYTORCH_NO_CUDA_MEMORY_CACHING=1), the device memory c10's
// allocator asked for): where its backward
// passes and optimizer steps begin and end, where one iteration of its training loop ends and
// the next begins (no marker needed), which lines keep tensors from one iteration to the next,
// and which tensors made before training are its parameters. The roles (block_roles.h) and the
// growth of leaks over iterations (leak_growth.h) both stand on it; the rules are documented in
// docs/architecture.md ("Roles").
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// What a block's stack says of the phase it was made in and of what made it. Frames are looked
// for anywhere in the stack: a dispatch mode (MemTracker's, say) puts frames of its own
// innermost.
struct StackFacts {
  bool module_apply = false;       // nn.Module._apply: .cuda(), .to(), to_empty() on parameters
  bool module_init = false;        // a layer of torch.nn made on the device, or a checkpoint loaded
  bool gradient_buckets = false;   // DDP's reducer: the flat tensors gradients are reduced in
  bool optimizer_init = false;     // an optimizer's _init_group: its state, made at the first step
  bool optimizer = false;          // any frame of torch/optim: the step
  std::string optimizer_name;      // "Adam" of Adam._init_group
  bool backward = false;           // Tensor.backward / torch.autograd.backward, or the engine
  bool autocast = false;           // torch.autocast, torch.amp
  bool torch_allocator = false;    // made by c10's CUDA allocator (a frame of libc10_cuda)
  bool library_workspace = false;  // torch's cuBLAS workspace: its size is not the batch's
  std::string site;                // the user's line, as RoleSite::where
};

StackFacts stack_facts(const std::vector<storage::StackFrame>& stack);

enum class Phase { kOther, kBackward, kStep };

// The phases of one process at a time; each distinct stack is read once across processes.
class TrainingPhases {
 public:
  explicit TrainingPhases(const storage::TraceReader& trace);

  // One pass over the process's tensors in the order made (none where it is the process found
  // last). Afterwards the accessors below speak of this process.
  void find(std::int64_t upid);

  // The process found last has tensors: blocks, or device memory c10's allocator asked the
  // driver for in a process that ran backward passes.
  bool has_tensors() const { return tensors_ != 0; }
  // Whether an allocation of the process found last is one of its tensors.
  bool is_tensor(const storage::AllocationRecord& record);
  // The allocations to read for its tensors (is_tensor() picks them out).
  const storage::AllocationFilter& tensor_filter() const { return filter_; }

  Phase phase_of(const storage::AllocationRecord& record);
  const StackFacts& facts(const std::optional<std::int64_t>& callsite);
  bool on_autograd_thread(std::int64_t utid) const { return autograd_threads_.contains(utid); }
  // Whether a process has an autograd engine thread: it ran backward passes.
  bool ran_backward(std::int64_t upid) const { return with_backward_.contains(upid); }

  // Where the phase changes from one block to the next, and the program's own markers.
  const std::vector<std::uint64_t>& boundaries() const { return boundaries_; }
  // Whether a boundary lies strictly between two events: a block freed with none between its
  // allocation and its free lived within one phase.
  bool boundary_between(std::uint64_t after, std::uint64_t before) const;
  // The alloc_seq of the first block of each backward phase.
  const std::vector<std::uint64_t>& backward_starts() const { return backward_starts_; }
  // The end of each iteration: the event just before the first block made outside backward
  // and the step after a backward pass (and its step), where one iteration's activations are
  // gone and the next one's are not yet made.
  const std::vector<std::uint64_t>& iteration_ends() const { return iteration_ends_; }
  // How many backward passes began strictly between two events.
  std::size_t backward_starts_between(std::uint64_t after, std::uint64_t before) const;
  // Lines that keep a tensor made after training began alive into two backward passes:
  // what one iteration made, a later one still holds.
  bool keeps_across_iterations(const std::optional<std::int64_t>& callsite) const;
  // A block made before the first backward pass, held through the passes after it, by a line
  // that made nothing once training began, whose size is that of a gradient the first
  // backward pass made: a parameter however it was made (torch.randn(..., device="cuda",
  // requires_grad=True), a device context).
  bool made_as_parameter(std::uint64_t alloc_seq) const { return parameters_.contains(alloc_seq); }

  static constexpr std::uint64_t kNeverFreed = UINT64_MAX;

 private:
  void scan();  // the pass of find() over filter_'s allocations

  const storage::TraceReader& trace_;
  const std::set<std::int64_t> autograd_threads_;
  std::optional<std::int64_t> found_;
  std::set<std::int64_t> with_backward_;  // processes with an autograd thread
  storage::AllocationFilter filter_;
  std::uint64_t tensors_ = 0;
  std::unordered_map<std::int64_t, StackFacts> facts_by_callsite_;
  std::vector<std::uint64_t> boundaries_, backward_starts_, iteration_ends_;
  std::unordered_set<std::int64_t> kept_across_iterations_;
  std::unordered_set<std::uint64_t> parameters_;
};

}  // namespace vramtrace::analysis
