#include "analysis/roles/block_roles.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/roles/training_phases.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// The rules of docs/architecture.md ("Roles") over the phases of the process that
// `phases.find()` last looked at.
BlockRole role_of(TrainingPhases& phases, const storage::AllocationRecord& record) {
  const storage::AllocationRow& a = record.allocation;
  const StackFacts& f = phases.facts(a.alloc_callsite_id);
  const std::uint64_t free_seq = record.free ? record.free->free_seq : TrainingPhases::kNeverFreed;
  const bool freed_in_phase =
      record.free.has_value() && !phases.boundary_between(a.alloc_seq, free_seq);
  if (f.module_apply || f.module_init) return BlockRole::kParameter;
  if (f.optimizer_init) return BlockRole::kOptimizerState;
  if (f.gradient_buckets && !freed_in_phase) return BlockRole::kGradient;
  // A gradient outlives the backward pass that made it, and is let go by the program
  // (zero_grad, the next step) or never.
  if (phases.on_autograd_thread(a.alloc_utid) && !freed_in_phase &&
      (!record.free || record.free->free_utid != a.alloc_utid))
    return BlockRole::kGradient;
  if (freed_in_phase) return BlockRole::kTemporary;
  const Phase phase = phases.phase_of(record);
  // Made by the step and kept past it: state an optimizer makes outside _init_group (SGD's
  // momentum buffers at its first step).
  if (phase == Phase::kStep) return BlockRole::kOptimizerState;
  if (phase != Phase::kOther) return BlockRole::kUnknown;
  if (phases.made_as_parameter(a.alloc_seq)) return BlockRole::kParameter;
  // A line that keeps what one iteration made into the next is a leak in the making, not an
  // activation, even for the block of the last iteration.
  if (phases.keeps_across_iterations(a.alloc_callsite_id)) return BlockRole::kUnknown;
  // An activation is made by the forward pass for the backward pass after it: alive when one
  // backward pass begins, gone before the next.
  if (phases.backward_starts_between(a.alloc_seq, free_seq) == 1) return BlockRole::kActivation;
  return BlockRole::kUnknown;
}

}  // namespace

std::vector<BlockLife> block_lives(const storage::TraceReader& trace, std::int64_t upid) {
  TrainingPhases phases(trace);
  phases.find(upid);
  std::vector<BlockLife> lives;
  trace.for_each_allocation(phases.tensor_filter(), [&](const storage::AllocationRecord& r) {
    if (!phases.is_tensor(r)) return;
    lives.push_back({r.allocation.alloc_seq,
                     r.free ? r.free->free_seq : TrainingPhases::kNeverFreed, r.allocation.alloc_ns,
                     r.free ? std::optional(r.free->free_ns) : std::nullopt, r.allocation.device,
                     r.allocation.size, role_of(phases, r)});
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
                                            const ProcessSelection& processes,
                                            TrainingPhases* shared_phases) {
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  std::optional<TrainingPhases> own_phases;
  TrainingPhases& phases = shared_phases ? *shared_phases : own_phases.emplace(trace);
  std::vector<ProcessMoment> moments;
  if (moment.kind == MomentSpec::Kind::kPeak) {
    // The blocks' own peak: what the program held at most, max_memory_allocated's moment. A
    // process whose tensors are not blocks (training_phases.h): its device memory's peak.
    std::map<std::int64_t, storage::LiveBytesPeak> largest, device_largest;
    for (const storage::LiveBytesPeak& peak : index.peaks()) {
      if (!is_selected(processes, peak.upid)) continue;
      std::map<std::int64_t, storage::LiveBytesPeak>* of_group = nullptr;
      if (peak.group == storage::kPeakGroupBlocks)
        of_group = &largest;
      else if (peak.group == storage::kPeakGroupDeviceMemory &&
               !with_allocator.contains(peak.upid) && phases.ran_backward(peak.upid))
        of_group = &device_largest;
      else
        continue;
      auto [it, added] = of_group->try_emplace(peak.upid, peak);
      if (!added && peak.bytes > it->second.bytes) it->second = peak;
    }
    largest.merge(device_largest);
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
  std::vector<ProcessRoles> report;
  for (const ProcessMoment& at : moments) {
    // One pass over the process's tensors for its phases, then only what was live: memory
    // follows the live set and the stacks, not the trace.
    phases.find(at.upid);
    if (!phases.has_tensors()) continue;
    ProcessRoles& roles = report.emplace_back();
    roles.upid = at.upid;
    roles.pid = at.pid;
    roles.world_size = world_sizes[at.upid];
    roles.seq = at.seq;
    roles.time_ns = at.time_ns;
    std::map<std::string, RoleSite> activation_sites;
    index.for_each_live_at(at.upid, at.seq, [&](const storage::AllocationRecord& record) {
      if (!phases.is_tensor(record)) return;
      const BlockRole role = role_of(phases, record);
      roles.live.add(role, record.allocation.size);
      if (!record.allocation.alloc_callsite_id) return;
      const StackFacts& facts = phases.facts(record.allocation.alloc_callsite_id);
      roles.autocast_seen = roles.autocast_seen || facts.autocast;
      if (facts.library_workspace &&
          (role == BlockRole::kActivation || role == BlockRole::kTemporary))
        roles.workspace_bytes += record.allocation.size;
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
