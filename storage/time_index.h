// TimeIndex: what a trace looked like at any moment, without rereading the whole trace.
//
// Contract:
// - open() makes sure the precomputed tables of docs/schema.md ("Time index") exist, then
//   answers from them. A finished trace in a writable file keeps them: the first open builds
//   them into the file (once; later opens reuse them). A trace that is still being written, or
//   that cannot be written (a read-only file or folder), gets them in a temporary database
//   that SQLite deletes on close, and note() says so: each open then pays the build again.
// - What it keeps, each built in one pass:
//   live_span: every successful allocation's [alloc_seq, free_seq) interval, filed in the
//     smallest of a ladder of sequence bins (4096 events, x8 per level) that holds it whole,
//     so that "live just after event s" reads the one bin per level that contains s: the rows
//     read are about the live set, not the trace.
//   allocator_segment, allocator_process: the segments that held a block, the processes with
//     blocks.
//   live_bytes_bucket, live_bytes_peak, live_at_peak: the rollups, rows that a BuildRollups
//     (storage/rollup_maker.h) makes from one ordered pass over the trace's events
//     (storage/live_bytes_rollups.h says what they mean), or that a writer kept up as rows
//     arrived (a RollupKeeper's); the index stores them and reads them back.
//   time_problem: the events of that pass whose times cannot be right (before their process
//     started, after it ended, earlier than the event before them), counted per process. A
//     trace is untrusted input: such a time is taken as far as it can be, never an error.
// - Queries that fail throw TraceError (one line, naming the file), as TraceReader's do.
// - The rows it gives back are storage/time_index_rows.h's; how it is built,
//   storage/time_index_build.h's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "storage/rollup_maker.h"
#include "storage/time_index_rows.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// As TraceReader, one thread at a time.
class TimeIndex {
 public:
  // On failure returns nullptr with *error set (one line, naming the file). The rollups are
  // storage/live_bytes_rollups.h's.
  static std::unique_ptr<TimeIndex> open(const std::filesystem::path& path, std::string* error);
  // The same, with the rollup rows made by `build_rollups` when the index is built (not when a
  // kept one is reused): for tests of the index itself.
  static std::unique_ptr<TimeIndex> open(const std::filesystem::path& path,
                                         const BuildRollups& build_rollups, std::string* error);
  // True when open() keeps (or has kept) the index in the file: a finished trace this user can
  // write. Reports that can also scan the trace use the index only then
  // (analysis/time/report_time_index.h), since building it aside costs more than one scan.
  static bool kept_in_file(const std::filesystem::path& path);
  ~TimeIndex();
  TimeIndex(const TimeIndex&) = delete;
  TimeIndex& operator=(const TimeIndex&) = delete;

  // Empty when the index came from the file; otherwise one line on how it was made.
  const std::string& note() const;

  // The time range of the trace's events: the first allocation to the last allocation or free,
  // each time within its process's start and end.
  std::int64_t start_ns() const;
  std::int64_t end_ns() const;

  // Successful allocations of process `upid` live just after its event `seq`:
  // alloc_seq <= seq < free_seq (free_seq NULL: never freed). In (alloc_seq, id) order.
  std::vector<AllocationRecord> live_at(std::int64_t upid, std::uint64_t seq) const;
  // The same allocations one at a time as they are read, in no particular order, each with
  // only `columns` read: for the reports that add a live set up (by stack, by segment), whose
  // memory then follows what they add up to rather than the live set, which can be millions.
  void for_each_live_at(std::int64_t upid, std::uint64_t seq,
                        const std::function<void(const AllocationRecord&)>& visit,
                        AllocationColumns columns = AllocationColumns::kAll) const;
  // The allocations live just after any of the process's events `seqs`, each once, as
  // for_each_live_at reads them: which of those moments each was live at is the caller's to
  // tell from its alloc_seq and free (every column set reads free_seq). One pass for the live
  // sets of several moments of one process (its peaks on each device), which mostly overlap.
  void for_each_live_at_any(std::int64_t upid, const std::vector<std::uint64_t>& seqs,
                            const std::function<void(const AllocationRecord&)>& visit,
                            AllocationColumns columns = AllocationColumns::kAll) const;
  // What the process left live after its last event (for_each_live_at at last_seq), added up
  // (docs/schema.md, live_at_end): one call per group of kind, device, callsite and segment,
  // with the group's bytes as the row's size and `count` its allocations, and one per live
  // allocator segment (its id set; 0 in the groups). The fields set: id, kind, device,
  // alloc_callsite_id, segment_id, size. For the reports of the end, whose cost then follows the
  // groups rather than the allocations left live.
  void for_each_live_at_end(
      std::int64_t upid,
      const std::function<void(const AllocationRow&, std::uint64_t count)>& visit) const;
  // The process's last event (an allocation, failed ones included, or a free) at or before
  // `ns`; 0 when it had none by then.
  std::uint64_t last_seq_at(std::int64_t upid, std::int64_t ns) const;
  // The process's last event; 0 when it had none.
  std::uint64_t last_seq(std::int64_t upid) const;
  // When the process's event `seq` (an allocation or a free) happened; unset: no such event.
  std::optional<std::int64_t> time_of(std::int64_t upid, std::uint64_t seq) const;
  // The process's successful allocations and frees with after_seq < seq <= through_seq, in
  // sequence order, read through the trace's (upid, seq) indexes: a window's events without
  // reading the rest of the trace. Stops when `visit` returns false; returns false then.
  bool for_each_event_between(std::int64_t upid, std::uint64_t after_seq, std::uint64_t through_seq,
                              const std::function<bool(const AllocationEvent&)>& visit) const;
  // False when the trace lacks those indexes (docs/schema.md, "Indexes": a trace still being
  // written, or never finished): every for_each_event_between and last_seq_at then scans the
  // allocation table.
  bool finds_events_by_seq() const;
  // The highest allocation id when the index was built: about the allocation table's rows.
  std::int64_t last_allocation_id() const;

  // In (upid, device, kind, bucket) order.
  std::vector<LiveBytesBucket> buckets() const;
  // The slices that buckets() fall in: their number, and where slice `i` begins (the first
  // clipped to start_ns; slice bucket_count() begins at end_ns + 1).
  std::uint32_t bucket_count() const;
  std::int64_t bucket_start_ns(std::uint64_t i) const;
  // In (upid, device, group) order.
  std::vector<LiveBytesPeak> peaks() const;
  // What was live at each of peaks(), by callsite: in (upid, device, group, callsite) order, no
  // callsite first.
  std::vector<LiveAtPeak> live_at_peaks() const;
  // Allocations that held a caching allocator's block at some time (segment_id of a block).
  std::unordered_set<std::int64_t> allocator_segments() const;
  // Processes with allocator events (a block, or an allocator out-of-memory report).
  std::set<std::int64_t> processes_with_allocator_events() const;
  // Events whose times cannot be right, in (upid, problem) order; empty for a sound trace.
  std::vector<TimeProblem> time_problems() const;

 private:
  struct Impl;
  explicit TimeIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramtrace::storage
