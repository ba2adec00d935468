// Leaks: allocations that succeeded and were never freed, grouped by where they were made.
//
// A group is one (allocation stack, kind): its allocations' bytes and count, and the stack
// resolved innermost frame first. Failed allocations are never leaks. Each kind leaks apart,
// the virtual memory API's three included: a reservation, a handle and a mapping left live are
// three leaks (of address space, of physical memory, of a mapping), even from one stack.
//
// Two levels (allocator_level.h). At the block level, a live block of a caching allocator (a
// tensor still alive) is a leak, and a live segment that the allocator made (one that held a
// block) is not: its bytes are the allocator's, reported apart as `cached` (the segment bytes
// not in a live block; a live block's bytes count as its leak). Allocations outside the
// allocator leak as at the segment level. At the segment level, blocks are not looked at and
// every live allocation of another kind is a leak. The default is the block level, which in a
// process without allocator events is the segment level.
//
// At both levels, what a CUDA library allocated for itself (library_memory.h: a cuBLAS handle's
// workspace, cuDNN's and NCCL's buffers) is no leak: it is reported apart, by library. At the
// block level, the virtual memory of PyTorch's expandable segments is the allocator's too: the
// address range it reserves (address space, not memory) and the physical handles behind its
// mappings (whose memory the mappings already count), made in libc10_cuda.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/allocator/library_memory.h"
#include "analysis/scope/allocation_scope.h"
#include "analysis/scope/process_filter.h"
#include "analysis/time/moment.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct LeakGroup {
  std::optional<std::int64_t> callsite_id;  // empty: allocated with no stack recorded
  int kind = 0;
  std::string kind_name;
  std::string level;        // "block" for kind block, "segment" for every other kind
  std::uint64_t bytes = 0;  // sum of size (bytes reserved, not requested)
  std::uint64_t count = 0;
  std::vector<storage::StackFrame> stack;  // innermost first
  // The process, where the report keeps processes apart (the ranks of a job); unset where
  // groups add up every process's allocations of the stack. Its pid and rank with it.
  std::optional<std::int64_t> upid;
  std::uint32_t pid = 0;
  std::optional<int> rank;
};

using LeakLevel = MemoryLevel;  // allocation_scope.h

struct CacheTotals {
  std::uint64_t bytes = 0;  // live allocator segments' bytes not in a live block
  std::uint64_t count = 0;  // live allocator segments
};

struct LeakReport {
  bool trace_complete = true;
  // "block" when the block level was asked for, or by default where a selected process had
  // allocator events; "segment" otherwise.
  std::string level;
  bool allocator_events = false;  // a selected process had allocator events
  CacheTotals cached;             // block level only
  // What CUDA libraries held for themselves, largest first; in no group and no total.
  std::vector<LibraryMemory> held_by_libraries;
  // Block level: the expandable segments' reservations (bytes of address space, count) and
  // handles (count) the allocator held; in no group and no total.
  struct ExpandableSegments {
    std::uint64_t reserved_bytes = 0, reservations = 0, handles = 0;
  } expandable_segments;
  std::vector<std::string> warnings;  // see trace_warnings()
  std::uint64_t total_bytes = 0;
  std::uint64_t total_count = 0;
  // Largest first: bytes, then count, both descending; then callsite id (no stack last) and
  // kind, ascending, so that equal groups always come out in the same order.
  std::vector<LeakGroup> groups;
  // With a moment (--at, --between): the moment in each process it applies to; a process it
  // does not apply to (no such marker) is left out of the report. Empty: the end of the trace.
  std::vector<ProcessMoment> at;
  std::vector<ProcessMoment> since;  // --between's first moment, per process
  // Without a moment: the selected processes whose program ended before they did (a Python
  // interpreter's finalization, TraceReader::program_end_seq), where what was live then counts
  // as live at the end though the teardown freed it.
  std::vector<std::int64_t> ended_at_python_finalizing;
};

struct LeakReportOptions {
  std::optional<std::int64_t> upid;  // only this process's leaks
  ProcessSelection processes;        // only these processes' leaks (and warnings)
  std::optional<LeakLevel> level;    // unset: the block level (see above)
  AllocationScope allocations;       // only leaks of these allocations (device, kind)
  // Only allocations made at sequence numbers first..last of `upid` (a test's range, say).
  struct SeqRange {
    std::uint64_t first = 0, last = UINT64_MAX;
  };
  std::optional<SeqRange> allocated_in;
  // The ranks of a job (two selected processes or more that recorded a rank) are kept apart, a
  // group per process, unless this asks to add them up.
  bool merge_ranks = false;
};

LeakReport build_leak_report(const storage::TraceReader& trace,
                             const LeakReportOptions& options = {});

// What was live at a moment (allocated at or before it, not freed by then) counts as leaked
// there, read from the time index rather than the whole trace. With `since`, only what was
// allocated after that moment (the same process's) counts: what M1..M2 left behind. The levels
// are as above; the end of the trace gives build_leak_report()'s report (options.allocated_in
// included).
LeakReport build_leak_report_at(const storage::TraceReader& trace, const storage::TimeIndex& index,
                                const MomentSpec& at, const std::optional<MomentSpec>& since,
                                const LeakReportOptions& options = {});

// The end of the trace: build_leak_report_at()'s report from `index` where one is given (a
// trace that keeps its time index: analysis/time/report_time_index.h's open_time_index_if_kept),
// which reads only what is live, and build_leak_report()'s, one scan of the trace, otherwise. The
// same report either way.
LeakReport build_leak_report_at_end(const storage::TraceReader& trace,
                                    const storage::TimeIndex* index,
                                    const LeakReportOptions& options = {});

// The live allocations of one moment as leak groups at a level: the shared step of the reports
// above and of the growth report. Allocations are added one at a time as they are read, and
// what is kept is one entry per group and per live allocator segment, never the allocations:
// a live set can be millions. Each allocation needs only the fields that
// storage::AllocationColumns::kLiveByStackAndSegment reads. `allocator_segments`: allocation ids
// that held a block.
struct LiveGroups {
  std::vector<LeakGroup> groups;  // unsorted; no stacks resolved
  CacheTotals cached;
  bool bytes_overflowed = false;  // a sum passed 2^64 - 1 and was held there (byte_sum.h)
};
class LiveGrouper {
 public:
  // `by_process`: a group per (process, stack, kind), its upid set; else per (stack, kind).
  LiveGrouper(bool block_level, const std::unordered_set<std::int64_t>& allocator_segments,
              bool by_process = false);
  // `count` allocations of live's kind, device, callsite and segment, live.size bytes in all
  // (TimeIndex::for_each_live_at_end's groups); an allocator segment is one.
  void add(const storage::AllocationRow& live, std::uint64_t count = 1);
  LiveGroups take();

 private:
  bool block_level_;
  const std::unordered_set<std::int64_t>& allocator_segments_;
  bool by_process_;
  // (upid or -1, callsite, kind)
  std::map<std::tuple<std::int64_t, std::optional<std::int64_t>, int>, LeakGroup> groups_;
  std::unordered_map<std::int64_t, std::uint64_t> live_block_bytes_in_;  // by segment id
  std::vector<std::pair<std::int64_t, std::uint64_t>> live_segments_;    // (id, size)
  bool bytes_overflowed_ = false;
};

// Sorts groups largest first and fills in kind names, levels and stacks.
void finish_groups(const storage::TraceReader& trace, std::vector<LeakGroup>* groups);

// The groups of a report as one callsite tree (groups of several kinds from one stack share its
// nodes), so that a tree and the report it came from always add up to the same bytes.
std::vector<CallsiteNode> build_leak_tree(const std::vector<LeakGroup>& groups,
                                          TreeDirection direction);

}  // namespace vramtrace::analysis
