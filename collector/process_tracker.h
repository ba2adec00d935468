// ProcessTracker: the processes of a recording and their threads, from their start to how
// they ended.
//
// A process is known from the moment its ring is handed over (open()); its row is written
// when it announces itself (ProcessStart), or with what the handshake told when it never does.
// Its end row is written when its ring closes, and written again when the kernel's word on how
// it ended (a wait status) comes later: that word beats the shim's.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "collector/ingest_stats.h"
#include "vramtrace.pb.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class ProcessTracker {
 public:
  // What is kept of a process for as long as the recording runs: enough to write its end row
  // again when a wait status arrives after its ring closed.
  struct Process {
    int64_t upid = 0;
    uint32_t pid = 0;  // from the socket handshake
    bool started = false;
    bool closed = false;    // close() ran
    bool complete = false;  // as close() was told
    std::optional<int> exit_status, signal;
    int64_t last_ns = 0;  // the latest record's time
    std::string exe;      // as the process announced it (/proc/self/exe): what it ran then
  };

  // A process's threads, dropped with its ring.
  struct Threads {
    std::unordered_map<uint32_t, int64_t> utids;  // by tid
    uint32_t last_tid = 0;                        // utid()'s latest answer; last_utid 0: none
    int64_t last_utid = 0;
    std::unordered_set<uint32_t> named;  // the tids whose names are in the trace
  };

  ProcessTracker(storage::TraceWriter& writer, IngestStats& stats);

  // A ring handed over by `pid`: a new process, with upids dense from 1.
  Process& open(uint32_t pid);
  // The process with this upid, or null.
  Process* find(int64_t upid);

  // The process announced itself at `time_ns`: writes its row.
  void start(Process& p, int64_t time_ns, const wire::ProcessStart& m);
  // Writes the row of a process that never announced itself, with what the handshake told.
  void start_unannounced(Process& p, int64_t time_ns);
  // The shim's word on how the process ended (exit()), until the kernel's comes.
  void said_exit(Process& p, int exit_status);
  // The process's ring was drained: writes its end row. `wait_status`: how it ended, when the
  // collector could tell; else one that set_wait_status() kept for its pid.
  void close(Process& p, bool complete, int64_t end_ns, std::optional<int> wait_status);
  // How the process `pid` ended, as waitpid reports it. It applies to the latest process with
  // that pid (exec keeps the pid); one not seen yet keeps it until its ring closes.
  void set_wait_status(uint32_t pid, int wait_status);

  // The utid of the thread `tid` of process `p`, its row written the first time, with the name
  // /proc gives it then.
  int64_t utid(const Process& p, Threads& threads, uint32_t tid);
  // The shim's word on the thread's name (wire::ThreadName), sent before its first event: the
  // name, unless /proc gave one when the thread was first seen.
  void name_thread(const Process& p, Threads& threads, uint32_t tid, const std::string& name);

  int64_t size() const { return static_cast<int64_t>(processes_.size()); }

 private:
  void apply_wait_status(Process& p, int wait_status);
  void write_end(const Process& p, int64_t end_ns);

  storage::TraceWriter& writer_;
  IngestStats& stats_;
  std::deque<Process> processes_;                          // by upid - 1; references stay valid
  std::unordered_map<uint32_t, int> pending_wait_status_;  // by pid, for rings not yet open
  int64_t next_utid_ = 1;
};

}  // namespace vramtrace::collector
