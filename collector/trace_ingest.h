// TraceIngest: turns the records of the processes' rings into trace rows.
//
// It decodes each record and hands it to the tracker whose job it is: processes and threads
// (process_tracker.h), modules and frames (module_tracker.h), stacks (stack_tracker.h),
// allocations and frees (allocation_tracker.h), markers (marker_tracker.h), CUPTI activity
// (memory_activity_tracker.h), and live queries (live_query.h). Each ring's process has one
// state of each tracker's, dropped whole when the ring closes. One instance serves every ring
// of a recording, from one thread.
//
// The payloads are untrusted: a record that does not decode, or a message that makes no
// sense (a free before its process started, an absurd stack), is counted in the trace's stats
// (ingest_stats.h) and skipped. Nothing here throws on bad input.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "collector/allocation_tracker.h"
#include "collector/hot_record_decoder.h"
#include "collector/ingest_stats.h"
#include "collector/live_query.h"
#include "collector/marker_pairing.h"
#include "collector/marker_tracker.h"
#include "collector/memory_activity_tracker.h"
#include "collector/module_tracker.h"
#include "collector/process_tracker.h"
#include "collector/stack_tracker.h"
#include "shm_ring.h"
#include "storage/trace_writer.h"
#include "vramtrace.pb.h"

namespace vramtrace::collector {

class TraceIngest {
 public:
  explicit TraceIngest(storage::TraceWriter& writer);
  ~TraceIngest();

  // A ring was handed over by the process with this pid. Returns the ring's id.
  int64_t open_ring(uint32_t pid);
  // One record of that ring.
  void on_record(int64_t ring_id, const ring::RecordHeader& header, const unsigned char* payload);
  // The ring's process is gone and its ring drained. `complete`: no record was lost or corrupt.
  // `wait_status`: how the process ended, when the collector could tell (process_exit.h).
  void close_ring(int64_t ring_id, bool complete, int64_t end_ns,
                  std::optional<int> wait_status = std::nullopt);
  // A ring that could not be read on: counts the loss.
  void ring_corrupt(int64_t ring_id);
  // The ring's process stopped recording while it ran on (the ring's header says so): counts
  // the loss.
  void recording_stopped(int64_t ring_id);
  // The ring's process exec'd a program the shim was not loaded into: counts the loss.
  void exec_untraced(int64_t ring_id);
  // The program the ring's process announced it runs; empty before it did.
  std::string program(int64_t ring_id);
  // How the process `pid` ended, as waitpid reports it: from the collector's own waitpid on
  // the traced command, or from a traced parent that reaped it (ChildExit). It applies to
  // the latest process with that pid (exec keeps the pid); one not seen yet keeps it until
  // its ring closes.
  void set_wait_status(uint32_t pid, int wait_status);

  // Writes the running counters to the stats table.
  void write_stats();
  // The counters, for what the recording around the ingest counts (refused connections).
  IngestStats& stats() { return stats_; }

  // Where the answers to live queries (live_query.h) go: the ring's process's socket. Without
  // a sink, queries are counted and not answered (the shim's caller times out).
  using ReplySink = std::function<void(int64_t ring_id, const LiveQueries::Reply& reply)>;
  void set_reply_sink(ReplySink sink) { reply_sink_ = std::move(sink); }

  int64_t allocations() const { return allocations_.allocations(); }
  int64_t processes() const { return processes_.size(); }

 private:
  // What a ring's process builds up in each tracker while the ring is open.
  struct ProcessState {
    ProcessTracker::Threads threads;
    ModuleTracker::ProcessModules modules;
    StackTracker::ProcessStacks stacks;
    AllocationTracker::ProcessAllocations allocations;
    MarkerPairing markers;
  };
  struct Ring {
    ProcessTracker::Process* process;  // kept after the ring closes
    ProcessState state;
  };

  Ring* ring_for(int64_t ring_id);
  // The shim's Alloc and Free records, most of a trace, decoded straight into hot_'s messages:
  // through the Envelope, each record made and freed its message and its stack's array.
  // Returns the body decoded, or BODY_NOT_SET: not such a record, or one the hand decoder
  // declines; take the general path.
  wire::Envelope::BodyCase parse_hot_record(const unsigned char* payload, uint32_t bytes);
  // An Alloc's or Free's thread and callsite; nullopt, counted, when its stack does not fit.
  // Inlined into on_record(): most records are allocations and frees.
  template <class Message>
  [[gnu::always_inline]] inline std::optional<AllocationTracker::Origin> origin_of(
      Ring& r, const Message& m);
  void on_free_failed(Ring& r, const wire::FreeFailed& m);
  void on_notice(const wire::Notice& m);
  void on_live_checkpoint(Ring& r, uint64_t seq);
  void on_live_query(Ring& r, const wire::LiveQuery& m);

  storage::TraceWriter& writer_;
  IngestStats stats_;
  ProcessTracker processes_;
  ModuleTracker modules_;
  StackTracker stacks_;
  AllocationTracker allocations_;
  MarkerTracker markers_;
  MemoryActivityTracker memory_activity_;
  std::vector<Ring> rings_;  // by ring id - 1; a ring's id is its process's upid
  ReplySink reply_sink_;

  wire::Envelope envelope_;  // reused: parsing into a cleared message keeps its buffers
  HotRecordDecoder hot_;     // parse_hot_record()'s
};

}  // namespace vramtrace::collector
