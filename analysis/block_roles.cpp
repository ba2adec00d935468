#include "analysis/block_roles.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/callsite_tree.h"
#include "analysis/live_bytes_rollups.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// What a block's stack says of the phase it was made in and of what made it. Frames are looked
// for anywhere in the stack: a dispatch mode (MemTracker's, say) puts frames of its own
// innermost.
struct StackFacts {
  bool module_apply = false;    // nn.Module._apply: .cuda(), .to(), ... on parameters and buffers
  bool optimizer_init = false;  // an optimizer's _init_group: its state, made at the first step
  bool optimizer = false;       // any frame of torch/optim: the step
  std::string optimizer_name;   // "Adam" of Adam._init_group
  bool backward = false;        // Tensor.backward / torch.autograd.backward, or the engine
  bool autocast = false;        // torch.autocast, torch.amp
  std::string site;             // the user's line, as RoleSite::where
};

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

StackFacts facts_of(const std::vector<storage::StackFrame>& stack) {
  StackFacts facts;
  facts.site = site_of(stack);
  for (const storage::StackFrame& frame : stack) {
    if (frame.language != storage::FrameLanguage::kPython) {
      if (contains(frame.function, "torch::autograd::Engine::thread_main") ||
          contains(frame.function, "torch::autograd::Engine::execute"))
        facts.backward = true;
      continue;
    }
    if (ends_with(frame.file, "/torch/nn/modules/module.py") &&
        ends_with(frame.function, "._apply"))
      facts.module_apply = true;
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

enum class Phase { kOther, kBackward, kStep };

// Whether some boundary lies strictly between a and b.
bool any_between(const std::vector<std::uint64_t>& sorted, std::uint64_t a, std::uint64_t b) {
  const auto next = std::upper_bound(sorted.begin(), sorted.end(), a);
  return next != sorted.end() && *next < b;
}

// What the rules read of a process besides a block's own record: its threads, the stacks'
// facts (each stack read once), and where its phases change.
class RoleRules {
 public:
  RoleRules(const storage::TraceReader& trace, std::set<std::int64_t> autograd_threads)
      : trace_(trace), autograd_threads_(std::move(autograd_threads)) {}

  // One pass over the process's blocks in the order made, keeping only where the phase changes
  // from one block to the next; each of the program's own markers is a boundary too.
  void find_phases(std::int64_t upid) {
    boundaries_.clear();
    backward_starts_.clear();
    Phase previous = Phase::kOther;
    trace_.for_each_allocation(blocks_of(upid), [&](const storage::AllocationRecord& record) {
      const Phase phase = phase_of(record);
      if (phase != previous) {
        boundaries_.push_back(record.allocation.alloc_seq);
        if (phase == Phase::kBackward) backward_starts_.push_back(record.allocation.alloc_seq);
      }
      previous = phase;
    });
    for (const storage::MarkerRecord& marker : trace_.markers()) {
      if (marker.start.upid != upid || marker.start.source == storage::kMarkerFromShim) continue;
      boundaries_.push_back(marker.start.start_seq);
      if (marker.end) boundaries_.push_back(marker.end->end_seq);
    }
    std::sort(boundaries_.begin(), boundaries_.end());
  }

  // The role of a block of the process find_phases() last looked at.
  BlockRole role_of(const storage::AllocationRecord& record) {
    const storage::AllocationRow& a = record.allocation;
    const StackFacts& f = facts(a.alloc_callsite_id);
    const std::uint64_t free_seq = record.free ? record.free->free_seq : kNeverFreed;
    const bool freed_in_phase =
        record.free.has_value() && !any_between(boundaries_, a.alloc_seq, free_seq);
    if (f.module_apply) return BlockRole::kParameter;
    if (f.optimizer_init) return BlockRole::kOptimizerState;
    // A gradient outlives the backward pass that made it, and is let go by the program
    // (zero_grad, the next step) or never.
    if (autograd_threads_.contains(a.alloc_utid) && !freed_in_phase &&
        (!record.free || record.free->free_utid != a.alloc_utid))
      return BlockRole::kGradient;
    if (freed_in_phase) return BlockRole::kTemporary;
    if (phase_of(record) == Phase::kOther && any_between(backward_starts_, a.alloc_seq, free_seq))
      return BlockRole::kActivation;
    return BlockRole::kUnknown;
  }

  const StackFacts& facts(const std::optional<std::int64_t>& callsite) {
    static const StackFacts kNone;
    if (!callsite) return kNone;
    auto [it, added] = facts_by_callsite_.try_emplace(*callsite);
    if (added) it->second = facts_of(trace_.stack(*callsite));
    return it->second;
  }

  static storage::AllocationFilter blocks_of(std::int64_t upid) {
    storage::AllocationFilter filter;
    filter.upid = upid;
    filter.kind = storage::allocation_kind::kBlock;
    filter.outcome = storage::AllocationFilter::Outcome::kSucceeded;
    return filter;
  }

  static constexpr std::uint64_t kNeverFreed = std::numeric_limits<std::uint64_t>::max();

 private:
  Phase phase_of(const storage::AllocationRecord& record) {
    const StackFacts& f = facts(record.allocation.alloc_callsite_id);
    if (autograd_threads_.contains(record.allocation.alloc_utid) || f.backward)
      return Phase::kBackward;
    return f.optimizer ? Phase::kStep : Phase::kOther;
  }

  const storage::TraceReader& trace_;
  const std::set<std::int64_t> autograd_threads_;
  std::unordered_map<std::int64_t, StackFacts> facts_by_callsite_;
  std::vector<std::uint64_t> boundaries_, backward_starts_;
};

// The autograd engine's threads: PyTorch names them pt_autograd_N.
std::set<std::int64_t> autograd_threads_of(const storage::TraceReader& trace) {
  std::set<std::int64_t> threads;
  for (const storage::ThreadRecord& thread : trace.threads()) {
    if (thread.name && thread.name->starts_with("pt_autograd_")) threads.insert(thread.utid);
  }
  return threads;
}

}  // namespace

std::vector<BlockLife> block_lives(const storage::TraceReader& trace, std::int64_t upid) {
  RoleRules rules(trace, autograd_threads_of(trace));
  rules.find_phases(upid);
  std::vector<BlockLife> lives;
  trace.for_each_allocation(RoleRules::blocks_of(upid), [&](const storage::AllocationRecord& r) {
    lives.push_back({r.allocation.alloc_seq, r.free ? r.free->free_seq : RoleRules::kNeverFreed,
                     r.allocation.alloc_ns, r.free ? std::optional(r.free->free_ns) : std::nullopt,
                     r.allocation.device, r.allocation.size, rules.role_of(r)});
  });
  return lives;
}

std::string_view block_role_name(BlockRole role) {
  static constexpr std::array<std::string_view, kBlockRoles> kNames{
      "parameter", "gradient", "optimizer_state", "activation", "temporary", "unknown"};
  return kNames.at(static_cast<std::size_t>(role));
}

std::uint64_t RoleTotals::total_bytes() const {
  std::uint64_t total = 0;
  for (const std::uint64_t b : bytes) total += b;
  return total;
}

void RoleTotals::add(BlockRole role, std::uint64_t size) {
  bytes[static_cast<std::size_t>(role)] += size;
  count[static_cast<std::size_t>(role)] += 1;
}

std::vector<ProcessRoles> build_role_report(const storage::TraceReader& trace,
                                            const storage::TimeIndex& index,
                                            const MomentSpec& moment,
                                            const ProcessSelection& processes) {
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  std::vector<ProcessMoment> moments;
  if (moment.kind == MomentSpec::Kind::kPeak) {
    // The blocks' own peak: what the program held at most, max_memory_allocated's moment.
    std::map<std::int64_t, storage::LiveBytesPeak> largest;
    for (const storage::LiveBytesPeak& peak : index.peaks()) {
      if (peak.group != kPeakGroupBlocks || !is_selected(processes, peak.upid)) continue;
      auto [it, added] = largest.try_emplace(peak.upid, peak);
      if (!added && peak.bytes > it->second.bytes) it->second = peak;
    }
    if (largest.empty()) throw BadMoment("no allocator block was live, so there is no peak");
    std::map<std::int64_t, std::uint32_t> pids;
    for (const storage::ProcessRecord& p : trace.processes()) pids[p.start.upid] = p.start.pid;
    for (const auto& [upid, peak] : largest)
      moments.push_back({upid, pids[upid], peak.seq, peak.ns});
  } else {
    moments = resolve_moment(trace, index, moment, processes);
  }
  std::map<std::int64_t, std::optional<int>> world_sizes;
  for (const storage::ProcessRecord& p : trace.processes())
    world_sizes[p.start.upid] = p.start.world_size;
  RoleRules rules(trace, autograd_threads_of(trace));
  std::vector<ProcessRoles> report;
  for (const ProcessMoment& at : moments) {
    if (!with_allocator.contains(at.upid)) continue;
    ProcessRoles& roles = report.emplace_back();
    roles.upid = at.upid;
    roles.pid = at.pid;
    roles.world_size = world_sizes[at.upid];
    roles.seq = at.seq;
    roles.time_ns = at.time_ns;
    // One pass over the process's blocks for its phases, then only what was live: memory
    // follows the live set and the stacks, not the trace.
    rules.find_phases(at.upid);
    std::map<std::string, RoleSite> activation_sites;
    index.for_each_live_at(at.upid, at.seq, [&](const storage::AllocationRecord& record) {
      if (record.allocation.kind != storage::allocation_kind::kBlock) return;
      const BlockRole role = rules.role_of(record);
      roles.live.add(role, record.allocation.size);
      if (!record.allocation.alloc_callsite_id) return;
      const StackFacts& facts = rules.facts(record.allocation.alloc_callsite_id);
      roles.autocast_seen = roles.autocast_seen || facts.autocast;
      if (role == BlockRole::kOptimizerState && roles.optimizer.empty())
        roles.optimizer = facts.optimizer_name;
      if (role == BlockRole::kActivation) {
        RoleSite& site = activation_sites[facts.site];
        site.where = facts.site;
        site.bytes += record.allocation.size;
        site.count += 1;
      }
    });
    for (auto& [where, site] : activation_sites) roles.activation_sites.push_back(std::move(site));
    std::stable_sort(roles.activation_sites.begin(), roles.activation_sites.end(),
                     [](const RoleSite& a, const RoleSite& b) { return a.bytes > b.bytes; });
  }
  return report;
}

}  // namespace vramtrace::analysis
