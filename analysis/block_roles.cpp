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

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string site_of(const std::vector<storage::StackFrame>& stack) {
  const storage::StackFrame* frame = user_python_frame(stack);
  if (frame == nullptr && !stack.empty()) frame = &stack.front();
  if (frame == nullptr) return "(no stack recorded)";
  std::string where = frame->function.value_or("??");
  if (frame->file && frame->line)
    where += " at " + base_name(*frame->file) + ":" + std::to_string(*frame->line);
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

struct Block {
  std::uint64_t alloc_seq = 0;
  std::uint64_t free_seq = std::numeric_limits<std::uint64_t>::max();  // max: never freed
  std::int64_t alloc_ns = 0;
  std::optional<std::int64_t> free_ns;
  int device = 0;
  std::uint64_t size = 0;
  std::int64_t alloc_utid = 0;
  std::optional<std::int64_t> free_utid;
  std::optional<std::int64_t> callsite;
  Phase phase = Phase::kOther;
  BlockRole role = BlockRole::kUnknown;
};

// Whether some boundary lies strictly between a and b.
bool any_between(const std::vector<std::uint64_t>& sorted, std::uint64_t a, std::uint64_t b) {
  const auto next = std::upper_bound(sorted.begin(), sorted.end(), a);
  return next != sorted.end() && *next < b;
}

// Every block of one process, in the order made, each with its role.
std::vector<Block> classify(const storage::TraceReader& trace, std::int64_t upid,
                            const std::set<std::int64_t>& autograd_threads,
                            std::unordered_map<std::int64_t, StackFacts>& facts_by_callsite) {
  const auto facts = [&](const std::optional<std::int64_t>& callsite) -> const StackFacts& {
    static const StackFacts kNone;
    if (!callsite) return kNone;
    auto [it, added] = facts_by_callsite.try_emplace(*callsite);
    if (added) it->second = facts_of(trace.stack(*callsite));
    return it->second;
  };
  std::vector<Block> blocks;
  storage::AllocationFilter filter;
  filter.upid = upid;
  filter.kind = storage::allocation_kind::kBlock;
  filter.outcome = storage::AllocationFilter::Outcome::kSucceeded;
  trace.for_each_allocation(filter, [&](const storage::AllocationRecord& record) {
    Block& block = blocks.emplace_back();
    block.alloc_seq = record.allocation.alloc_seq;
    block.alloc_ns = record.allocation.alloc_ns;
    block.device = record.allocation.device;
    block.size = record.allocation.size;
    block.alloc_utid = record.allocation.alloc_utid;
    block.callsite = record.allocation.alloc_callsite_id;
    if (record.free) {
      block.free_seq = record.free->free_seq;
      block.free_ns = record.free->free_ns;
      block.free_utid = record.free->free_utid;
    }
  });
  // The phase each block was made in, and where the phases change: each change, and each of
  // the program's own markers, is a boundary.
  std::vector<std::uint64_t> boundaries, backward_starts;
  Phase previous = Phase::kOther;
  for (Block& block : blocks) {
    const StackFacts& f = facts(block.callsite);
    block.phase = autograd_threads.contains(block.alloc_utid) || f.backward ? Phase::kBackward
                  : f.optimizer                                             ? Phase::kStep
                                                                            : Phase::kOther;
    if (block.phase != previous) {
      boundaries.push_back(block.alloc_seq);
      if (block.phase == Phase::kBackward) backward_starts.push_back(block.alloc_seq);
    }
    previous = block.phase;
  }
  for (const storage::MarkerRecord& marker : trace.markers()) {
    if (marker.start.upid != upid || marker.start.source == storage::kMarkerFromShim) continue;
    boundaries.push_back(marker.start.start_seq);
    if (marker.end) boundaries.push_back(marker.end->end_seq);
  }
  std::sort(boundaries.begin(), boundaries.end());
  for (Block& block : blocks) {
    const StackFacts& f = facts(block.callsite);
    const bool freed_in_phase =
        block.free_utid.has_value() && !any_between(boundaries, block.alloc_seq, block.free_seq);
    const bool made_by_the_engine = autograd_threads.contains(block.alloc_utid);
    if (f.module_apply) {
      block.role = BlockRole::kParameter;
    } else if (f.optimizer_init) {
      block.role = BlockRole::kOptimizerState;
    } else if (made_by_the_engine && !freed_in_phase &&
               (!block.free_utid || *block.free_utid != block.alloc_utid)) {
      // A gradient outlives the backward pass that made it, and is let go by the program
      // (zero_grad, the next step) or never.
      block.role = BlockRole::kGradient;
    } else if (freed_in_phase) {
      block.role = BlockRole::kTemporary;
    } else if (block.phase == Phase::kOther &&
               any_between(backward_starts, block.alloc_seq, block.free_seq)) {
      block.role = BlockRole::kActivation;
    }
  }
  return blocks;
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

std::vector<BlockLife> block_lives(const storage::TraceReader& trace, std::int64_t upid) {
  std::unordered_map<std::int64_t, StackFacts> facts_by_callsite;
  std::vector<BlockLife> lives;
  for (const Block& block : classify(trace, upid, autograd_threads_of(trace), facts_by_callsite)) {
    lives.push_back({block.alloc_seq, block.free_seq, block.alloc_ns, block.free_ns, block.device,
                     block.size, block.role});
  }
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
  const std::set<std::int64_t> autograd_threads = autograd_threads_of(trace);
  std::map<std::int64_t, std::optional<int>> world_sizes;
  for (const storage::ProcessRecord& p : trace.processes())
    world_sizes[p.start.upid] = p.start.world_size;
  std::unordered_map<std::int64_t, StackFacts> facts_by_callsite;
  std::vector<ProcessRoles> report;
  for (const ProcessMoment& at : moments) {
    if (!with_allocator.contains(at.upid)) continue;
    ProcessRoles& roles = report.emplace_back();
    roles.upid = at.upid;
    roles.pid = at.pid;
    roles.world_size = world_sizes[at.upid];
    roles.seq = at.seq;
    roles.time_ns = at.time_ns;
    std::map<std::string, RoleSite> activation_sites;
    for (const Block& block : classify(trace, at.upid, autograd_threads, facts_by_callsite)) {
      if (block.alloc_seq > at.seq || block.free_seq <= at.seq) continue;
      roles.live.add(block.role, block.size);
      if (!block.callsite) continue;
      const StackFacts& facts = facts_by_callsite.at(*block.callsite);
      roles.autocast_seen = roles.autocast_seen || facts.autocast;
      if (block.role == BlockRole::kOptimizerState && roles.optimizer.empty())
        roles.optimizer = facts.optimizer_name;
      if (block.role == BlockRole::kActivation) {
        RoleSite& site = activation_sites[facts.site];
        site.where = facts.site;
        site.bytes += block.size;
        site.count += 1;
      }
    }
    for (auto& [where, site] : activation_sites) roles.activation_sites.push_back(std::move(site));
    std::stable_sort(roles.activation_sites.begin(), roles.activation_sites.end(),
                     [](const RoleSite& a, const RoleSite& b) { return a.bytes > b.bytes; });
  }
  return report;
}

}  // namespace vramtrace::analysis
