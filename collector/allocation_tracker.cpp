#include "collector/allocation_tracker.h"

#include "storage/trace_writer.h"

namespace vramtrace::collector {

AllocationTracker::AllocationTracker(storage::TraceWriter& writer, IngestStats& stats)
    : writer_(writer), stats_(stats) {}

void AllocationTracker::on_alloc(ProcessAllocations& p, const ring::RecordHeader& h,
                                 const wire::Alloc& m, const Origin& origin) {
  if (m.stack_truncated()) stats_.add(Stat::kStackTruncated);
  storage::AllocationRow row;
  row.id = next_allocation_id_++;
  row.upid = origin.upid;
  row.kind = m.kind();
  row.api = m.api();
  row.device = m.device();
  row.stream = m.stream();
  row.address = m.address();
  row.size = m.size();
  row.requested_size = m.has_requested_size() ? m.requested_size() : m.size();
  row.flags = m.flags();
  if (m.pool() != 0) row.pool = m.pool();
  row.result = m.result();
  row.alloc_seq = h.seq;
  row.alloc_ns = h.time_ns;
  row.alloc_utid = origin.utid;
  row.alloc_callsite_id = origin.callsite;
  if (m.kind() == wire::KIND_VMM_MAPPING) {
    row.vmm_handle = m.handle();
    row.vmm_offset = m.offset();
  }
  if (m.kind() == wire::KIND_BLOCK) {
    if (m.has_allocator_allocated()) row.allocator_allocated = m.allocator_allocated();
    if (m.has_allocator_reserved()) row.allocator_reserved = m.allocator_reserved();
    if (m.result() == 0) {
      if (auto segment = p.live.segment_containing(m.address(), m.size())) {
        row.segment_id = segment->id;
        p.queries.on_block_in_segment(segment->id);
      } else {
        stats_.add(Stat::kBlockWithoutSegment);
      }
    }
  }
  if (m.correlation_id() != 0) row.correlation_id = m.correlation_id();
  writer_.add_allocation(row);
  if (m.result() != 0 && m.has_device_free() && m.has_device_total())
    writer_.add_failure_device_memory(row.id, m.device_free(), m.device_total());
  p.correlations.on_alloc(m.correlation_id(), m.address(), row.id);

  if (m.result() != 0) return;  // a failed allocation holds nothing
  p.queries.on_alloc(row.id, h.seq, row.kind, row.size, row.alloc_callsite_id);
  if (p.live.add(m.address(), {row.id, row.kind, row.size})) {
    // The address is live already: its free was not seen (made by a path the shim does not
    // hook). The older allocation stays live in the trace; the new one takes the address.
    stats_.add(Stat::kAllocOverLiveAddress);
  }
}

void AllocationTracker::on_free(ProcessAllocations& p, const ring::RecordHeader& h,
                                const wire::Free& m, const Origin& origin) {
  if (p.recent_frees.size() < kRecentFreesKept) p.recent_frees.emplace_back();
  RecentFree& recent = p.recent_frees[p.recent_free_next];
  p.recent_free_next = (p.recent_free_next + 1) % kRecentFreesKept;
  recent.seq = h.seq;
  recent.address = m.address();
  recent.ns = h.time_ns;
  recent.utid = origin.utid;
  recent.api = m.api();
  recent.callsite_id = origin.callsite;
  recent.bad_free_id.reset();
  recent.ended.clear();
  p.live.remove_for_free(m.api(), m.address(), m.size(), &recent.ended);
  if (recent.ended.empty()) {
    // A free nested in another hook, of memory the trace never saw allocated: the library's
    // own (its allocation was nested too), or a signal handler's of such memory.
    if (m.nested()) {
      stats_.add(Stat::kNestedFreeUnmatched);
      return;
    }
    recent.bad_free_id = add_bad_free(origin.upid, recent, storage::kBadFreeUnknownAddress, 0);
    return;
  }
  storage::FreeRow row;
  row.free_seq = h.seq;
  row.free_ns = h.time_ns;
  row.free_utid = recent.utid;
  row.free_callsite_id = recent.callsite_id;
  row.free_api = m.api();
  if (m.has_allocator_allocated()) row.allocator_allocated = m.allocator_allocated();
  if (m.has_allocator_reserved()) row.allocator_reserved = m.allocator_reserved();
  for (const auto& [address, entry] : recent.ended) {
    writer_.set_free(entry.id, row);
    p.queries.on_free(entry.id);
    // Each allocation the call ended gets its own activity record from CUPTI.
    p.correlations.on_free(m.correlation_id(), address, entry.id);
  }
}

void AllocationTracker::on_free_failed(ProcessAllocations& p, int64_t upid,
                                       const wire::FreeFailed& m,
                                       const std::function<std::optional<int64_t>()>& stack) {
  // Newest first: a free's failure comes right after it.
  RecentFree* it = nullptr;
  const size_t kept = p.recent_frees.size();
  for (size_t back = 1; back <= kept && it == nullptr; ++back) {
    RecentFree& f = p.recent_frees[(p.recent_free_next + kept - back) % kept];
    if (f.seq == m.free_seq()) it = &f;
  }
  if (it == nullptr) {
    stats_.add(Stat::kFreeFailedUnmatched);
    return;
  }
  // The failed call's stack comes with FreeFailed when the free went without one (the shim's
  // default: no stacks for frees).
  if (!it->callsite_id) it->callsite_id = stack();
  // A free of an unknown address that also failed is already a bad_free row; only a free of
  // live allocations has to be undone.
  if (it->bad_free_id) {
    writer_.fail_bad_free(*it->bad_free_id, m.result(), it->callsite_id);
    it->bad_free_id.reset();
  }
  if (it->ended.empty()) return;
  for (const auto& [address, entry] : it->ended) {
    writer_.clear_free(entry.id);
    p.live.restore(address, entry);
  }
  add_bad_free(upid, *it, storage::kBadFreeCallFailed, m.result());
  it->ended.clear();
}

int64_t AllocationTracker::add_bad_free(int64_t upid, const RecentFree& f, std::string_view reason,
                                        int result) {
  storage::BadFreeRow row;
  row.id = next_bad_free_id_++;
  row.upid = upid;
  row.seq = f.seq;
  row.ns = f.ns;
  row.utid = f.utid;
  row.api = f.api;
  row.address = f.address;
  row.result = result;
  row.callsite_id = f.callsite_id;
  row.reason = std::string(reason);
  writer_.add_bad_free(row);
  return row.id;
}

}  // namespace vramtrace::collector
