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
//   live_bytes_bucket, live_bytes_peak, live_at_peak: the rollups, rows that the caller's
//   BuildRollups makes
//     from one ordered pass over the trace's events (analysis/live_bytes_rollups.h says what
//     they mean), or that a writer kept up as rows arrived (a RollupKeeper's); the index stores
//     them and reads them back.
//   time_problem: the events of that pass whose times cannot be right (before their process
//     started, after it ended, earlier than the event before them), counted per process. A
//     trace is untrusted input: such a time is taken as far as it can be, never an error.
// - Queries that fail throw TraceError (one line, naming the file), as TraceReader's do.
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

#include "storage/trace_rows.h"

namespace vramtrace::storage {

// live_bytes_bucket's time slices: at most kLiveBytesBuckets over the index's [start_ns,
// end_ns], each 2^shift ns and starting at a multiple of it, with the smallest shift that fits.
// Slices of a power of two, aligned, are what a writer can keep up before it knows the trace's
// end: two neighbours merge into one of the next size exactly.
inline constexpr std::uint32_t kLiveBytesBuckets = 16384;
int live_bytes_bucket_shift(std::int64_t start_ns, std::int64_t end_ns);

// A row of live_bytes_bucket: live bytes of one (process, device, kind) in one time slice of
// the trace.
struct LiveBytesBucket {
  std::int64_t upid = 0;
  int device = 0, kind = 0;
  std::uint32_t bucket = 0;  // the slice: (ns >> shift) - (start_ns >> shift)
  // Over the slice, the value it started with included; `last` holds until the next bucket of
  // the same series (a slice without events is not stored).
  std::uint64_t min_bytes = 0, max_bytes = 0, last_bytes = 0;
};

// A row of live_bytes_peak: the peak of a group of kinds of one process on one device.
struct LiveBytesPeak {
  std::int64_t upid = 0;
  int device = 0;
  std::string group;  // peak_group
  std::uint64_t bytes = 0;
  std::uint64_t seq = 0;  // the event that first reached it
  std::int64_t ns = 0;
};

// A row of live_at_peak: the allocations of one callsite live at a peak of live_bytes_peak
// (the same upid, device and group), just after its event.
struct LiveAtPeak {
  std::int64_t upid = 0;
  int device = 0;
  std::string group;                        // peak_group
  std::optional<std::int64_t> callsite_id;  // alloc_callsite_id
  std::uint64_t count = 0, bytes = 0;
};

// What time_problem counts (its column `problem`).
inline constexpr const char* kTimeBeforeProcessStart = "before_process_start";
inline constexpr const char* kTimeAfterProcessEnd = "after_process_end";
inline constexpr const char* kTimeOutOfOrder = "out_of_order";

// A row of time_problem: one process's events with one kind of impossible time.
struct TimeProblem {
  std::int64_t upid = 0;
  std::string problem;  // kTimeBeforeProcessStart, kTimeAfterProcessEnd or kTimeOutOfOrder
  std::uint64_t events = 0;
  std::uint64_t first_seq = 0;  // the first such event
};

// What the rollups are built from, once per build.
struct RollupSource {
  // The span of the index (TimeIndex::start_ns() and end_ns()).
  std::int64_t start_ns = 0, end_ns = 0;
  // Every successful allocation and free of the trace: processes in upid order, each process's
  // events in sequence order (a free before an allocation of the same number), each with its
  // callsite_id. A time before
  // its process's start or after its end comes as that start or end; a time earlier than the
  // event before it comes as it is (the trace's times need not rise with its sequence, and the
  // rollups must not rely on it). time_problem counts both.
  std::function<void(const std::function<void(const AllocationEvent&)>& visit)> for_each_event;
};

// Where the rollups go: rows of live_bytes_bucket, live_bytes_peak and live_at_peak, in any
// order.
struct RollupSink {
  std::function<void(const LiveBytesBucket&)> add_bucket;
  std::function<void(const LiveBytesPeak&)> add_peak;
  std::function<void(const LiveAtPeak&)> add_live_at_peak;
};

using BuildRollups = std::function<void(const RollupSource&, const RollupSink&)>;

// The same rollups made as rows arrive (TraceWriter's kAsRowsArrive), by the caller's rules: a
// writer gives it what RollupSource would (each process's events in sequence order, times
// within the process's span), and only while the times also rise; the trace's span comes last.
class RollupKeeper {
 public:
  virtual ~RollupKeeper() = default;
  virtual void add(const AllocationEvent& event) = 0;
  virtual void write(std::int64_t start_ns, std::int64_t end_ns, const RollupSink& sink) const = 0;
};

// As TraceReader, one thread at a time.
class TimeIndex {
 public:
  // `build_rollups` makes the rollup rows when the index is built (not when a kept one is
  // reused). On failure returns nullptr with *error set (one line, naming the file).
  static std::unique_ptr<TimeIndex> open(const std::filesystem::path& path,
                                         const BuildRollups& build_rollups, std::string* error);
  // True when open() keeps (or has kept) the index in the file: a finished trace this user can
  // write. Reports that can also scan the trace use the index only then
  // (analysis/time_index.h), since building it aside costs more than one scan.
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
