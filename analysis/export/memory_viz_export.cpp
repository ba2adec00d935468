#include "analysis/export/memory_viz_export.h"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/allocator/fragmentation.h"
#include "analysis/export/pickle_writer.h"
#include "analysis/time/device_peaks.h"
#include "analysis/time/report_time_index.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

constexpr std::uint64_t kMiB = 1024 * 1024;
// torch's CUDACachingAllocator: requests of at most 1 MiB come from the small pool, whose
// segments are kSmallBuffer (2 MiB); the large pool's are kLargeBuffer (20 MiB), or a request
// over kMinLargeAlloc (10 MiB) rounded up to 2 MiB, so never 2 MiB. Expandable segments grow
// by pages of those two sizes.
constexpr std::uint64_t kSmallBuffer = 2 * kMiB;
constexpr std::uint64_t kLargeBuffer = 20 * kMiB;

std::string_view segment_type(const SegmentLayout& segment) {
  if (segment.expandable) return segment.size % kLargeBuffer == 0 ? "large" : "small";
  return segment.size == kSmallBuffer ? "small" : "large";
}

// What an allocation asked for, where the trace knows it; else its size.
std::uint64_t requested_of(const storage::AllocationRow& row) {
  return row.requested_size != 0 && row.requested_size <= row.size ? row.requested_size : row.size;
}

using Action = MemoryVizAction;
using Block = MemoryVizBlock;
using Segment = MemoryVizSegment;

// Frames lists written once per stack and frame dicts once per frame, then recalled: events
// share their stacks, and stacks their outer frames, as torch's own snapshot shares them.
class FrameWriter {
 public:
  FrameWriter(const storage::TraceReader& trace, PickleWriter& out) : trace_(trace), out_(out) {}

  void frames(std::optional<std::int64_t> callsite) {
    const std::int64_t key = callsite.value_or(-1);
    if (const auto found = stacks_.find(key); found != stacks_.end()) {
      out_.recall(found->second);
      return;
    }
    out_.begin_list();
    if (callsite) {
      for (const storage::StackFrame& frame : trace_.stack(callsite)) write_frame(frame);
    }
    out_.end_list();
    stacks_.emplace(key, out_.remember());
  }

 private:
  void write_frame(const storage::StackFrame& frame) {
    const bool shared = frame.cut == storage::StackCut::kNone && frame.frame_id != 0;
    if (shared) {
      if (const auto found = frames_.find(frame.frame_id); found != frames_.end()) {
        out_.recall(found->second);
        return;
      }
    }
    // As addr2line and torch's symbolizer say it: "??" for what is not known; a native frame
    // without a source file is named by its module.
    out_.begin_dict();
    out_.interned("filename");
    out_.string(frame.file ? *frame.file : frame.module.empty() ? "??" : frame.module);
    out_.interned("line");
    out_.integer(frame.line.value_or(0));
    out_.interned("name");
    out_.string(frame.function.value_or("??"));
    out_.end_dict();
    if (shared) frames_.emplace(frame.frame_id, out_.remember());
  }

  const storage::TraceReader& trace_;
  PickleWriter& out_;
  std::unordered_map<std::int64_t, std::uint32_t> stacks_;  // callsite (-1: none) -> memo
  std::unordered_map<std::int64_t, std::uint32_t> frames_;  // frame id -> memo
};

// The allocator's segments as `frag` lays them out, with what the pickle adds from the live
// rows: each segment's stream and stack, each block's request and stack.
std::vector<Segment> allocator_segments(const Fragmentation& layout,
                                        const std::vector<storage::AllocationRecord>& live) {
  std::unordered_map<std::uint64_t, const storage::AllocationRow*> blocks, segments;
  for (const storage::AllocationRecord& record : live) {
    const storage::AllocationRow& row = record.allocation;
    (row.kind == kind::kBlock ? blocks : segments).emplace(row.address, &row);
  }
  std::vector<Segment> out;
  for (const SegmentLayout& layout_segment : layout.segments) {
    Segment& segment = out.emplace_back();
    segment.device = layout_segment.device;
    segment.address = layout_segment.address;
    segment.size = layout_segment.size;
    segment.type = segment_type(layout_segment);
    segment.expandable = layout_segment.expandable;
    if (const auto row = segments.find(segment.address); row != segments.end()) {
      segment.stream = row->second->stream;
      segment.callsite = row->second->alloc_callsite_id;
    }
    for (const SegmentBlock& layout_block : layout_segment.blocks) {
      Block& block = segment.blocks.emplace_back();
      block.address = layout_block.address;
      block.size = layout_block.size;
      block.active = layout_block.used;
      if (!block.active) continue;
      // A block that runs on past its segment (an expandable segment's mapping that only the
      // block's tail is in is not a segment of the trace's) is laid out to the segment's end,
      // and so is its request, or the blocks would not add up to the segment.
      block.requested = std::min(layout_block.requested.value_or(block.size), block.size);
      if (const auto row = blocks.find(block.address); row != blocks.end())
        block.callsite = row->second->alloc_callsite_id;
    }
  }
  return out;
}

// A process without allocator events: each live allocation of device memory is a segment of
// one active block.
std::vector<Segment> raw_segments(const std::vector<storage::AllocationRecord>& live) {
  std::vector<Segment> out;
  for (const storage::AllocationRecord& record : live) {
    const storage::AllocationRow& row = record.allocation;
    if (!occupies_device_memory(row.kind) || row.device < 0) continue;
    out.push_back({row.device,
                   row.address,
                   row.size,
                   row.stream,
                   "large",
                   false,
                   row.alloc_callsite_id,
                   {{row.address, row.size, requested_of(row), true, row.alloc_callsite_id}}});
  }
  std::sort(out.begin(), out.end(), [](const Segment& x, const Segment& y) {
    return std::pair(x.device, x.address) < std::pair(y.device, y.address);
  });
  return out;
}

// One entry of a device trace.
struct Entry {
  std::uint64_t seq = 0;
  std::int64_t ns = 0;
  std::uint64_t address = 0, size = 0, stream = 0;
  std::optional<std::int64_t> callsite;
  Action action = Action::kAlloc;
  bool operator>(const Entry& other) const {
    return std::pair(seq, action) > std::pair(other.seq, other.action);
  }
};

// The process's allocator events on `device` through event `last_seq`, in (sequence, action)
// order. Allocations come in sequence order; the entries of their frees wait in a heap until an
// event after them lets them out, so memory holds what is live, not the trace.
void for_each_entry(const storage::TraceReader& trace, const MemoryVizSnapshot& snapshot,
                    int device, const std::function<void(const Entry&)>& visit) {
  const std::uint64_t last_seq = snapshot.at.seq;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> frees;
  const auto free_before = [&](std::uint64_t seq) {
    while (!frees.empty() && frees.top().seq < seq) {
      visit(frees.top());
      frees.pop();
    }
  };
  std::unordered_map<std::int64_t, std::uint64_t> segment_stream;
  storage::AllocationFilter filter;
  filter.upid = snapshot.at.upid;
  trace.for_each_allocation(filter, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& row = record.allocation;
    if (row.device != device || row.alloc_seq > last_seq) return;
    const bool block = row.kind == kind::kBlock;
    const bool segment = snapshot.allocator_events ? snapshot.segment_ids.contains(row.id)
                                                   : !block && occupies_device_memory(row.kind);
    if (!(snapshot.allocator_events ? block || segment : segment)) return;
    free_before(row.alloc_seq);
    std::uint64_t stream = row.stream;
    if (block && row.segment_id) {
      if (const auto found = segment_stream.find(*row.segment_id); found != segment_stream.end())
        stream = found->second;
    }
    // The allocation's entries go out now, in action order; its free's wait.
    const auto made = [&](Action action, std::uint64_t size) {
      visit(
          {row.alloc_seq, row.alloc_ns, row.address, size, stream, row.alloc_callsite_id, action});
    };
    const std::uint64_t requested = requested_of(row);
    const bool allocator_block = block || !snapshot.allocator_events;
    if (row.result != 0) {
      // The allocator's out-of-memory (a block), or a program's failed allocation.
      if (allocator_block) made(Action::kOom, requested);
      return;
    }
    const bool mapping = row.kind == kind::kVmmMapping;
    if (segment) {
      segment_stream.emplace(row.id, row.stream);
      made(mapping ? Action::kSegmentMap : Action::kSegmentAlloc, row.size);
    }
    if (allocator_block) made(Action::kAlloc, requested);
    if (!record.free || record.free->free_seq > last_seq) return;
    const storage::FreeRow& free = *record.free;
    // As torch does when the free's own stack was not recorded: the allocation's.
    const std::optional<std::int64_t> free_stack =
        free.free_callsite_id ? free.free_callsite_id : row.alloc_callsite_id;
    const auto freed = [&](Action action, std::uint64_t size) {
      frees.push({free.free_seq, free.free_ns, row.address, size, stream, free_stack, action});
    };
    if (allocator_block) {
      freed(Action::kFreeRequested, requested);
      freed(Action::kFreeCompleted, requested);
    }
    if (segment) freed(mapping ? Action::kSegmentUnmap : Action::kSegmentFree, row.size);
  });
  free_before(UINT64_MAX);
}

// A dict's key (interned: every dict of a kind has the same keys) and its number.
void number_item(PickleWriter& out, std::string_view key, std::uint64_t value) {
  out.interned(key);
  out.unsigned_integer(value);
}

void write_segment(PickleWriter& out, FrameWriter& frames, const Segment& segment) {
  std::uint64_t allocated = 0, requested = 0;
  for (const Block& block : segment.blocks) {
    if (!block.active) continue;
    allocated += block.size;
    requested += block.requested;
  }
  out.begin_dict();
  out.interned("device");
  out.integer(segment.device);
  number_item(out, "address", segment.address);
  number_item(out, "total_size", segment.size);
  number_item(out, "allocated_size", allocated);
  number_item(out, "active_size", allocated);
  number_item(out, "requested_size", requested);
  number_item(out, "stream", segment.stream);
  out.interned("segment_type");
  out.interned(segment.type);
  out.interned("segment_pool_id");
  out.begin_tuple();
  out.integer(0);
  out.integer(0);
  out.end_tuple();
  out.interned("is_expandable");
  out.boolean(segment.expandable);
  out.interned("frames");
  frames.frames(segment.callsite);
  out.interned("blocks");
  out.begin_list();
  for (const Block& block : segment.blocks) {
    out.begin_dict();
    number_item(out, "address", block.address);
    number_item(out, "size", block.size);
    number_item(out, "requested_size", block.requested);
    out.interned("state");
    out.interned(block.active ? "active_allocated" : "inactive");
    out.interned("frames");
    frames.frames(block.active ? block.callsite : std::nullopt);
    out.end_dict();
  }
  out.end_list();
  out.end_dict();
}

void write_entry(PickleWriter& out, FrameWriter& frames, const Entry& entry) {
  out.begin_dict();
  out.interned("action");
  out.interned(memory_viz_action_name(entry.action));
  if (entry.action == Action::kOom) {
    // What the device had free is not in the trace.
    out.interned("device_free");
    out.integer(0);
  } else {
    number_item(out, "addr", entry.address);
  }
  number_item(out, "size", entry.size);
  number_item(out, "stream", entry.stream);
  out.interned("frames");
  frames.frames(entry.callsite);
  out.interned("time_us");
  out.integer(entry.ns / 1000);
  out.end_dict();
}

// BadMoment from the process choice, said for this export.
[[noreturn]] void refuse_several(const storage::TraceReader& trace, const storage::TimeIndex& index,
                                 const MemoryVizOptions& options) {
  const std::vector<ProcessMoment> moments =
      resolve_moment(trace, index, MomentSpec{}, options.processes);
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  const auto allocators = std::count_if(moments.begin(), moments.end(), [&](const auto& at) {
    return with_allocator.contains(at.upid);
  });
  throw BadMoment(
      allocators > 1
          ? std::to_string(allocators) +
                " selected processes recorded allocator blocks, and a memory_viz snapshot is "
                "one process's: choose one with --pid, --rank or --host"
          : std::to_string(moments.size()) +
                " processes are selected, none with allocator blocks, and a memory_viz snapshot "
                "is one process's: choose one with --pid, --rank or --host");
}

}  // namespace

std::string_view memory_viz_action_name(MemoryVizAction action) {
  // In MemoryVizAction's order.
  static constexpr std::array<std::string_view, 8> kNames = {
      "segment_alloc",  "segment_map",  "alloc",         "free_requested",
      "free_completed", "segment_free", "segment_unmap", "oom"};
  return kNames.at(static_cast<std::size_t>(action));
}

std::size_t MemoryVizSnapshot::active_blocks() const {
  std::size_t count = 0;
  for (const MemoryVizSegment& segment : segments) {
    count += static_cast<std::size_t>(
        std::count_if(segment.blocks.begin(), segment.blocks.end(),
                      [](const MemoryVizBlock& block) { return block.active; }));
  }
  return count;
}

MemoryVizSnapshot build_memory_viz(const storage::TraceReader& trace,
                                   const MemoryVizOptions& options) {
  const std::unique_ptr<storage::TimeIndex> index = open_time_index(trace);
  FragmentationReport report;
  try {
    report =
        build_fragmentation_report(trace, *index, MomentSpec{}, options.processes, options.device);
  } catch (const BadMoment&) {
    refuse_several(trace, *index, options);
  }
  std::vector<storage::AllocationRecord> live = index->live_at(report.at.upid, report.at.seq);
  if (options.device) {
    std::erase_if(live, [&](const storage::AllocationRecord& r) {
      return r.allocation.device != *options.device;
    });
  }
  MemoryVizSnapshot snapshot;
  snapshot.at = report.at;
  snapshot.allocator_events = report.allocator_events;
  snapshot.segments =
      report.allocator_events ? allocator_segments(report.layout, live) : raw_segments(live);
  live.clear();
  if (snapshot.allocator_events) snapshot.segment_ids = index->allocator_segments();
  snapshot.device = options.device;
  // A list for every device up to the last one the process has events on (as torch's snapshot
  // has one per device), found from the trace's totals rather than a pass over its events.
  snapshot.devices = options.device ? *options.device + 1 : 1;
  for (const Segment& segment : snapshot.segments)
    snapshot.devices = std::max(snapshot.devices, segment.device + 1);
  if (!options.device) {
    for (const storage::AllocationTotalsRow& totals : trace.allocation_totals()) {
      if (totals.upid == report.at.upid && totals.device >= 0 &&
          (totals.kind == kind::kBlock || occupies_device_memory(totals.kind)))
        snapshot.devices = std::max(snapshot.devices, totals.device + 1);
    }
  }
  return snapshot;
}

std::size_t write_memory_viz(const storage::TraceReader& trace, const MemoryVizSnapshot& snapshot,
                             std::ostream& stream) {
  std::size_t entries = 0;
  PickleWriter out(stream);
  FrameWriter frames(trace, out);
  out.begin_dict();
  out.interned("segments");
  out.begin_list();
  for (const Segment& segment : snapshot.segments) write_segment(out, frames, segment);
  out.end_list();
  out.interned("device_traces");
  out.begin_list();
  for (int device = 0; device < snapshot.devices; ++device) {
    out.begin_list();
    // A device that is not the one asked for has an empty list, as in torch's snapshot.
    if (!snapshot.device || *snapshot.device == device) {
      for_each_entry(trace, snapshot, device, [&](const Entry& entry) {
        write_entry(out, frames, entry);
        ++entries;
      });
    }
    out.end_list();
  }
  out.end_list();
  out.end_dict();
  out.finish();
  return entries;
}

}  // namespace vramtrace::analysis
