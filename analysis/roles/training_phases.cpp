#include "analysis/roles/training_phases.h"

#include <algorithm>
#include <map>

#include "analysis/values/live_callsite_tree.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

std::string site_of(const std::vector<storage::StackFrame>& stack) {
  const storage::StackFrame* frame = user_python_frame(stack);
  if (frame == nullptr && !stack.empty()) frame = &stack.front();
  if (frame == nullptr) return "(no stack recorded)";
  std::string where = frame->function.value_or("??");
  if (frame->file && frame->line)
    where += " at " + std::string(storage::path_base_name(*frame->file)) + ":" +
             std::to_string(*frame->line);
  return where;
}

bool ends_with(const std::optional<std::string>& text, std::string_view suffix) {
  return text && std::string_view(*text).ends_with(suffix);
}
bool contains(const std::optional<std::string>& text, std::string_view part) {
  return text && text->find(part) != std::string::npos;
}

// A layer's own constructor in torch.nn (nn.Linear(..., device="cuda"), or any layer built in a
// `with torch.device("cuda")` block), a lazy layer's parameters made at its first call, or a
// checkpoint loaded by transformers or accelerate straight onto the device.
bool makes_module_state(const storage::StackFrame& frame) {
  if (contains(frame.file, "/torch/nn/modules/"))
    return ends_with(frame.function, ".__init__") || ends_with(frame.function, ".reset_parameters");
  if (ends_with(frame.file, "/torch/nn/parameter.py"))
    return ends_with(frame.function, ".materialize");
  return ends_with(frame.file, "/transformers/modeling_utils.py") ||
         ends_with(frame.file, "/accelerate/utils/modeling.py");
}

// The autograd engine's threads: PyTorch names them pt_autograd_N.
std::set<std::int64_t> autograd_threads_of(const storage::TraceReader& trace) {
  std::set<std::int64_t> threads;
  for (const storage::ThreadRecord& thread : trace.threads()) {
    if (thread.name && thread.name->starts_with("pt_autograd_")) threads.insert(thread.utid);
  }
  return threads;
}

}  // namespace

StackFacts stack_facts(const std::vector<storage::StackFrame>& stack) {
  StackFacts facts;
  facts.site = site_of(stack);
  for (const storage::StackFrame& frame : stack) {
    if (frame.language != storage::FrameLanguage::kPython) {
      if (storage::path_base_name(frame.module).starts_with("libc10_cuda"))
        facts.torch_allocator = true;
      if (contains(frame.function, "at::cuda::allocateCUDABlasWorkspace") ||
          contains(frame.function, "at::cuda::getCUDABlasLtWorkspace"))
        facts.library_workspace = true;
      if (contains(frame.function, "torch::autograd::Engine::thread_main") ||
          contains(frame.function, "torch::autograd::Engine::execute"))
        facts.backward = true;
      // DistributedDataParallel's buckets, made at its construction and again when it
      // rebuilds them after the first iteration.
      if (contains(frame.function, "c10d::Reducer::initialize_bucket"))
        facts.gradient_buckets = true;
      continue;
    }
    if (ends_with(frame.file, "/torch/nn/modules/module.py") &&
        ends_with(frame.function, "._apply"))
      facts.module_apply = true;
    if (makes_module_state(frame)) facts.module_init = true;
    if (contains(frame.file, "/torch/optim/")) {
      facts.optimizer = true;
      if (ends_with(frame.function, "._init_group")) {
        facts.optimizer_init = true;
        facts.optimizer_name = frame.function->substr(0, frame.function->size() - 12);
      } else if (ends_with(frame.function, "_init_group")) {
        facts.optimizer_init = true;
      }
    }
    if (contains(frame.file, "/torch/amp/") || contains(frame.function, "autocast") ||
        contains(frame.function, "GradScaler"))
      facts.autocast = true;
    if ((ends_with(frame.file, "/torch/autograd/__init__.py") && frame.function == "backward") ||
        (ends_with(frame.file, "/torch/_tensor.py") && frame.function == "Tensor.backward"))
      facts.backward = true;
  }
  return facts;
}

TrainingPhases::TrainingPhases(const storage::TraceReader& trace)
    : trace_(trace), autograd_threads_(autograd_threads_of(trace)) {
  for (const storage::ThreadRecord& thread : trace.threads()) {
    if (autograd_threads_.contains(thread.utid)) with_backward_.insert(thread.upid);
  }
}

bool TrainingPhases::is_tensor(const storage::AllocationRecord& record) {
  const int kind = record.allocation.kind;
  if (filter_.kind) return kind == *filter_.kind;
  return (kind == storage::allocation_kind::kDevice || kind == storage::allocation_kind::kAsync) &&
         facts(record.allocation.alloc_callsite_id).torch_allocator;
}

const StackFacts& TrainingPhases::facts(const std::optional<std::int64_t>& callsite) {
  static const StackFacts kNone;
  if (!callsite) return kNone;
  auto [it, added] = facts_by_callsite_.try_emplace(*callsite);
  if (added) it->second = stack_facts(trace_.stack(*callsite));
  return it->second;
}

Phase TrainingPhases::phase_of(const storage::AllocationRecord& record) {
  const StackFacts& f = facts(record.allocation.alloc_callsite_id);
  if (autograd_threads_.contains(record.allocation.alloc_utid) || f.backward)
    return Phase::kBackward;
  return f.optimizer ? Phase::kStep : Phase::kOther;
}

std::size_t TrainingPhases::backward_starts_between(std::uint64_t after,
                                                    std::uint64_t before) const {
  const auto first = std::upper_bound(backward_starts_.begin(), backward_starts_.end(), after);
  const auto last = std::lower_bound(first, backward_starts_.end(), before);
  return static_cast<std::size_t>(last - first);
}

bool TrainingPhases::boundary_between(std::uint64_t after, std::uint64_t before) const {
  const auto next = std::upper_bound(boundaries_.begin(), boundaries_.end(), after);
  return next != boundaries_.end() && *next < before;
}

bool TrainingPhases::keeps_across_iterations(const std::optional<std::int64_t>& callsite) const {
  return callsite && kept_across_iterations_.contains(*callsite);
}

void TrainingPhases::find(std::int64_t upid) {
  if (found_ == upid) return;
  found_ = upid;
  // Blocks where the process has them; else, in a process that ran backward passes, what c10's
  // allocator took from the driver directly. Found by trying the blocks first.
  filter_ = {};
  filter_.upid = upid;
  filter_.kind = storage::allocation_kind::kBlock;
  filter_.outcome = storage::AllocationFilter::Outcome::kSucceeded;
  scan();
  if (tensors_ == 0 && with_backward_.contains(upid)) {
    filter_.kind.reset();
    scan();
  }
}

void TrainingPhases::scan() {
  const std::int64_t upid = *filter_.upid;
  tensors_ = 0;
  boundaries_.clear();
  backward_starts_.clear();
  iteration_ends_.clear();
  kept_across_iterations_.clear();
  parameters_.clear();

  struct Held {
    std::uint64_t alloc_seq = 0, free_seq = kNeverFreed, size = 0;
    std::optional<std::int64_t> callsite;
    std::int64_t alloc_utid = 0;
    std::optional<std::int64_t> free_utid;
  };
  // Blocks made outside backward and the step since the last backward pass began (fresh), and
  // those alive when it began (seen once): one still alive at the next start was alive at two.
  std::vector<Held> fresh, seen_once;
  std::vector<Held> setup;           // made outside backward and the step before training began
  std::size_t setup_kept = 0;        // setup's size after it was last pruned
  std::vector<Held> first_backward;  // made on an autograd thread in the first backward phase
  std::unordered_set<std::int64_t> lines_in_training;  // callsites outside backward, once begun
  bool first_backward_phase = false;

  const auto backward_begins = [&](std::uint64_t seq) {
    for (const Held& held : seen_once) {
      if (held.free_seq > seq && held.callsite) kept_across_iterations_.insert(*held.callsite);
    }
    seen_once.clear();
    for (Held& held : fresh) {
      if (held.free_seq > seq) seen_once.push_back(std::move(held));
    }
    fresh.clear();
  };

  Phase previous = Phase::kOther;
  trace_.for_each_allocation(filter_, [&](const storage::AllocationRecord& record) {
    if (!is_tensor(record)) return;
    ++tensors_;
    const storage::AllocationRow& a = record.allocation;
    const Phase phase = phase_of(record);
    if (phase != previous) {
      boundaries_.push_back(a.alloc_seq);
      first_backward_phase = phase == Phase::kBackward && backward_starts_.empty();
      if (phase == Phase::kBackward) {
        backward_starts_.push_back(a.alloc_seq);
        backward_begins(a.alloc_seq);
      }
      if (phase == Phase::kOther) iteration_ends_.push_back(a.alloc_seq - 1);
    }
    previous = phase;
    const Held held{
        a.alloc_seq,  record.free ? record.free->free_seq : kNeverFreed,
        a.size,       a.alloc_callsite_id,
        a.alloc_utid, record.free ? std::optional(record.free->free_utid) : std::nullopt};
    if (phase == Phase::kOther) {
      if (backward_starts_.empty()) {
        // A program that never runs backward (inference) would keep every block here: those
        // freed already cannot be parameters (alive into two backward passes) and go, but for
        // those a parameter's stack made, which count against the gradients below.
        if (setup.size() >= 2 * setup_kept + 4096) {
          std::erase_if(setup, [&](const Held& h) {
            if (h.free_seq >= a.alloc_seq) return false;
            const StackFacts& f = facts(h.callsite);
            return !f.module_apply && !f.module_init;
          });
          setup_kept = setup.size();
        }
        setup.push_back(held);
      } else {
        fresh.push_back(held);
        if (a.alloc_callsite_id) lines_in_training.insert(*a.alloc_callsite_id);
      }
    } else if (first_backward_phase && autograd_threads_.contains(a.alloc_utid)) {
      first_backward.push_back(held);
    }
  });
  for (const storage::MarkerRecord& marker : trace_.markers()) {
    if (marker.start.upid != upid || marker.start.source == storage::kMarkerFromShim) continue;
    boundaries_.push_back(marker.start.start_seq);
    if (marker.end) boundaries_.push_back(marker.end->end_seq);
  }
  std::sort(boundaries_.begin(), boundaries_.end());

  // The parameters made without nn.Module._apply: each takes the place of a gradient of its
  // size that the first backward pass made and kept (as block_roles.cpp tells a gradient),
  // after the parameters known from their stacks have taken theirs. Two backward passes at
  // least: with one, nothing tells a parameter from the batch it was used with.
  if (backward_starts_.size() < 2) return;
  std::map<std::uint64_t, std::size_t> gradients_of_size;
  for (const Held& held : first_backward) {
    const bool freed_in_phase =
        held.free_seq != kNeverFreed && !boundary_between(held.alloc_seq, held.free_seq);
    if (!freed_in_phase && held.free_utid != held.alloc_utid) ++gradients_of_size[held.size];
  }
  for (const Held& held : setup) {
    const StackFacts& f = facts(held.callsite);
    if (!f.module_apply && !f.module_init) continue;
    if (auto it = gradients_of_size.find(held.size); it != gradients_of_size.end() && it->second)
      --it->second;
  }
  for (const Held& held : setup) {
    const StackFacts& f = facts(held.callsite);
    if (f.module_apply || f.module_init) continue;
    if (held.callsite && lines_in_training.contains(*held.callsite)) continue;
    if (backward_starts_between(held.alloc_seq, held.free_seq) < 2) continue;
    auto it = gradients_of_size.find(held.size);
    if (it == gradients_of_size.end() || it->second == 0) continue;
    --it->second;
    parameters_.insert(held.alloc_seq);
  }
}

}  // namespace vramtrace::analysis
