// TraceIngest: turns the records of the processes' rings into trace rows.
//
// It owns everything the collector learns as records arrive: which process each ring
// belongs to, where each process loaded its modules, which allocations are live (to match a
// free to its allocation), the interned frames and callsites. One instance serves every
// ring of a recording, from one thread.
//
// Ring order is sequence order within a process (the shim stamps both under the ring's
// lock), so a free always arrives before any allocation that reuses its address.
//
// The payloads are untrusted: a record that does not decode, or a message that makes no
// sense (a free before its process started, an absurd stack), is counted in the trace's stats
// and skipped. Nothing here throws on bad input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/callsite_tree.h"
#include "collector/correlation_index.h"
#include "collector/live_allocations.h"
#include "collector/live_query.h"
#include "collector/marker_pairing.h"
#include "collector/symbolizer.h"
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
  // How the process `pid` ended, as waitpid reports it: from the collector's own waitpid on
  // the traced command, or from a traced parent that reaped it (ChildExit). It applies to
  // the latest process with that pid (exec keeps the pid); one not seen yet keeps it until
  // its ring closes.
  void set_wait_status(uint32_t pid, int wait_status);

  // Writes the running counters to the stats table.
  void write_stats();

  // Where the answers to live queries (live_query.h) go: the ring's process's socket. Without
  // a sink, queries are counted and not answered (the shim's caller times out).
  using ReplySink = std::function<void(int64_t ring_id, const LiveQueries::Reply& reply)>;
  void set_reply_sink(ReplySink sink) { reply_sink_ = std::move(sink); }

  int64_t allocations() const { return next_allocation_id_ - 1; }
  int64_t processes() const { return static_cast<int64_t>(processes_.size()); }

 private:
  struct Mapping {
    uint64_t start, end, load_bias;
    int64_t module_id;
  };
  // A free recently seen, kept until a FreeFailed could no longer refer to it.
  struct RecentFree {
    uint64_t seq;
    uint64_t address;
    // What it ended (more than one for a cuMemUnmap of several mappings); empty: nothing live
    // was at the address, and a bad_free row says so.
    std::vector<std::pair<uint64_t, LiveAllocations::Entry>> ended;
    int64_t ns, utid;
    int api;
    std::optional<int64_t> callsite_id;
    std::optional<int64_t> bad_free_id;  // the bad_free row an unknown address made
  };
  struct StackHash {
    using is_transparent = void;
    size_t operator()(std::span<const uint64_t> ips) const;
  };
  struct StackEqual {
    using is_transparent = void;
    bool operator()(std::span<const uint64_t> a, std::span<const uint64_t> b) const {
      return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  struct PcKey {
    int64_t module_id;
    uint64_t rel_pc;
    friend bool operator==(const PcKey&, const PcKey&) = default;
  };
  struct PcKeyHash {
    size_t operator()(const PcKey& k) const;
  };
  // A Python code object as PythonCode announced it, with the module row of its file.
  struct PythonCode {
    int64_t module_id;
    std::string name;
    std::string filename;
  };
  // A stack name's meaning in one process, in 8 bytes (a process with many threads has 4096
  // names per thread's table): a callsite id (>= 0), kNoCallsite for a stack that interned to
  // none, or kUnnamed until the shim defines it.
  class NamedStack {
   public:
    bool named() const { return value_ != kUnnamed; }
    std::optional<int64_t> callsite() const {
      return value_ >= 0 ? std::optional<int64_t>(value_) : std::nullopt;
    }
    void define(std::optional<int64_t> callsite) { value_ = callsite.value_or(kNoCallsite); }

   private:
    static constexpr int64_t kUnnamed = -2, kNoCallsite = -1;
    int64_t value_ = kUnnamed;
  };
  struct Process {
    int64_t upid;
    uint32_t pid;
    bool started = false;
    bool said_exit = false;
    bool closed = false;    // close_ring() ran
    bool complete = false;  // as close_ring() was told
    std::optional<int> exit_status, signal;
    int64_t last_ns = 0;
    std::vector<Mapping> mappings;  // sorted by start
    std::unordered_map<uint32_t, int64_t> threads;
    uint32_t last_tid = 0;  // utid_for()'s latest answer; last_utid 0: none
    int64_t last_utid = 0;
    LiveAllocations live;
    // The last kRecentFreesKept frees, oldest overwritten first (their `ended` vectors are
    // reused: no allocation per free). recent_free_next: the slot the next free takes.
    std::vector<RecentFree> recent_frees;
    size_t recent_free_next = 0;
    MarkerPairing markers;
    // Raw stacks already interned: most events repeat a stack, and this skips the per-frame
    // work for them. Addresses are per process, so the cache is too.
    std::unordered_map<std::vector<uint64_t>, std::optional<int64_t>, StackHash, StackEqual>
        stack_cache;
    // Stack names (preload/stack_names.h): what each name the shim gave stands for, by name.
    // Names are dense from 1 (a table of the shim's per thread); a name past the vector's
    // bound, which only a broken ring sends, goes to the map.
    std::vector<NamedStack> stack_names;
    std::unordered_map<uint32_t, NamedStack> far_stack_names;
    // Python (python_splice.h): an address inside the interpreter's object, once the shim has
    // found one, and the code objects it announced, by their wire id.
    std::optional<uint64_t> python_interpreter_address;
    std::unordered_map<uint64_t, PythonCode> python_codes;
    // The CUPTI backend: API callbacks' allocations by correlation id, for activity records.
    CorrelationIndex correlations;
    LiveQueries queries;
  };

  Process* process_for(int64_t ring_id);
  // The shim's Alloc and Free records, most of a trace, parsed straight into alloc_ or free_:
  // through the Envelope, each record made and freed its message and its stack's array.
  // Returns the body parsed, or BODY_NOT_SET: not such a record, take the general path.
  wire::Envelope::BodyCase parse_hot_record(const unsigned char* payload, uint32_t bytes);
  void on_process_start(Process& p, const ring::RecordHeader& h, const wire::ProcessStart& m);
  void on_module(Process& p, const wire::Module& m);
  void on_alloc(Process& p, const ring::RecordHeader& h, const wire::Alloc& m);
  void on_free(Process& p, const ring::RecordHeader& h, const wire::Free& m);
  void on_free_failed(Process& p, const wire::FreeFailed& m);
  void on_notice(Process& p, const wire::Notice& m);
  void on_marker(Process& p, const ring::RecordHeader& h, const wire::Marker& m);
  void on_memory_activity(Process& p, const wire::MemoryActivity& m);
  void on_live_query(Process& p, const wire::LiveQuery& m);
  void apply_wait_status(Process& p, int wait_status);

  int64_t utid_for(Process& p, uint32_t tid);
  int64_t module_id_for(const std::string& path, const std::string& build_id);
  // A stack's callsite: its native frames, with the Python frames (wire ids of code objects,
  // and lines, innermost first) in place of the interpreter's.
  std::optional<int64_t> intern_stack(Process& p, std::span<const uint64_t> ips,
                                      std::span<const uint64_t> python_code,
                                      std::span<const uint32_t> python_line);
  // An Alloc's, Free's or FreeFailed's callsite: its native and Python frames, its Python
  // status counted.
  template <class Message>
  std::optional<int64_t> event_callsite(Process& p, const Message& m);
  // The slot of a stack name, or null for a name that is 0 or past any sane bound.
  NamedStack* stack_name_slot(Process& p, uint32_t name);
  // False, counted as stack_too_deep, when the record's stack is deeper than the wire allows.
  template <class Message>
  bool stack_fits(const Message& m);
  int64_t python_frame_id(const Process& p, uint64_t code, uint32_t line);
  void on_python_code(Process& p, const wire::PythonCode& m);
  void count_python_stack(wire::PythonStackStatus status);
  bool in_interpreter(const Process& p, uint64_t pc) const;
  const std::vector<int64_t>& frames_for_pc(const Process& p, uint64_t pc);
  // Writes a frame row and keeps what a live query's report shows of it.
  void add_frame(const storage::FrameRow& row);
  // A callsite's frames as a report shows them, innermost first, from what is in memory.
  std::vector<storage::StackFrame> stack_of(std::optional<int64_t> callsite) const;
  void count(const char* name, storage::Severity severity, const char* description, int64_t by = 1);

  storage::TraceWriter& writer_;
  Symbolizer symbolizer_;
  CallsiteTree callsites_;

  std::unordered_map<int64_t, Process> processes_;         // by ring id (== upid)
  std::unordered_map<uint32_t, int> pending_wait_status_;  // by pid, for rings not yet open
  int64_t next_upid_ = 1;
  int64_t next_utid_ = 1;
  int64_t next_mapping_id_ = 1;
  int64_t next_frame_id_ = 1;
  int64_t next_allocation_id_ = 1;
  int64_t next_bad_free_id_ = 1;
  int64_t next_marker_id_ = 1;
  int64_t next_memory_activity_id_ = 1;

  struct ModuleInfo {
    int64_t id;
    std::string path;
    std::string build_id;  // raw bytes
  };
  std::unordered_map<std::string, int64_t> module_ids_;  // path + '\0' + build-id -> id
  std::vector<ModuleInfo> modules_;                      // by id - 1
  // (module id, rel_pc) -> frame ids, innermost first (more than one with inlining).
  std::unordered_map<PcKey, std::vector<int64_t>, PcKeyHash> frames_by_pc_;
  // Python frames: (module id of the file, '\0', function, '\0', line) -> frame id.
  std::unordered_map<std::string, int64_t> python_frames_;
  std::vector<storage::FrameRow> frame_rows_;  // by id - 1, for live queries' reports
  ReplySink reply_sink_;

  struct Counter {
    storage::Severity severity;
    std::string description;
    int64_t value = 0;
  };
  std::unordered_map<std::string, Counter> counters_;
  int64_t stacks_by_name_ = 0;  // the stat stacks_by_name

  wire::Envelope envelope_;          // reused: parsing into a cleared message keeps its buffers
  std::vector<uint64_t> stack_key_;  // intern_stack()'s key for mixed stacks, reused likewise
  wire::Alloc alloc_;                // parse_hot_record()'s, reused likewise
  wire::Free free_;
};

}  // namespace vramtrace::collector
