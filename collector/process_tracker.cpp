#include "collector/process_tracker.h"

#include <sys/wait.h>

#include <algorithm>

#include "collector/thread_name.h"
#include "storage/trace_writer.h"

namespace vramtrace::collector {

ProcessTracker::ProcessTracker(storage::TraceWriter& writer, IngestStats& stats)
    : writer_(writer), stats_(stats) {}

ProcessTracker::Process& ProcessTracker::open(uint32_t pid) {
  Process& p = processes_.emplace_back();
  p.upid = static_cast<int64_t>(processes_.size());
  p.pid = pid;
  return p;
}

ProcessTracker::Process* ProcessTracker::find(int64_t upid) {
  if (upid < 1 || upid > static_cast<int64_t>(processes_.size())) return nullptr;
  return &processes_[static_cast<size_t>(upid) - 1];
}

void ProcessTracker::start(Process& p, int64_t time_ns, const wire::ProcessStart& m) {
  p.started = true;
  storage::ProcessRow row;
  row.upid = p.upid;
  row.pid = p.pid;  // from the socket handshake; the message's own pid must agree
  if (m.pid() != 0 && m.pid() != p.pid) stats_.add(Stat::kProcessPidMismatch);
  row.ppid = m.ppid();
  row.uid = m.uid();
  row.host = m.hostname();
  row.exe = m.exe();
  p.exe = m.exe();
  row.argv.assign(m.argv().begin(), m.argv().end());
  if (m.argv_cut()) stats_.add(Stat::kProcessArgvCut);
  row.start_ns = time_ns;
  row.start_realtime_ns = static_cast<int64_t>(m.start_realtime_ns());
  row.unwinder = m.unwinder();
  if (m.has_rank()) row.rank = m.rank();
  if (m.has_local_rank()) row.local_rank = m.local_rank();
  if (m.has_world_size()) row.world_size = m.world_size();
  if (m.backend() == wire::BACKEND_CUPTI) row.backend = storage::kBackendCupti;
  writer_.add_process(row);
  if (m.unwinder() == "none") stats_.add(Stat::kProcessWithoutUnwinder);
}

void ProcessTracker::start_unannounced(Process& p, int64_t time_ns) {
  wire::ProcessStart unknown;
  unknown.set_pid(p.pid);
  start(p, time_ns, unknown);
}

void ProcessTracker::said_exit(Process& p, int exit_status) {
  p.exit_status = exit_status;
}

void ProcessTracker::close(Process& p, bool complete, int64_t end_ns,
                           std::optional<int> wait_status) {
  if (auto pending = pending_wait_status_.find(p.pid); pending != pending_wait_status_.end()) {
    if (!wait_status) wait_status = pending->second;
    pending_wait_status_.erase(pending);
  }
  if (wait_status) apply_wait_status(p, *wait_status);
  if (!p.started) start_unannounced(p, end_ns);
  p.complete = complete;
  // The end as written now, which a wait status that comes later must keep.
  p.last_ns = std::max(p.last_ns, end_ns);
  write_end(p, p.last_ns);
  p.closed = true;
}

void ProcessTracker::set_wait_status(uint32_t pid, int wait_status) {
  auto latest = std::find_if(processes_.rbegin(), processes_.rend(),
                             [&](const Process& p) { return p.pid == pid; });
  if (latest == processes_.rend()) {
    pending_wait_status_[pid] = wait_status;
    return;
  }
  apply_wait_status(*latest, wait_status);
}

void ProcessTracker::apply_wait_status(Process& p, int wait_status) {
  // The kernel's word beats the shim's: it also covers _exit, abort and fatal signals.
  if (WIFEXITED(wait_status)) {
    p.exit_status = WEXITSTATUS(wait_status);
    p.signal.reset();
  } else if (WIFSIGNALED(wait_status)) {
    p.signal = WTERMSIG(wait_status);
    p.exit_status.reset();
  } else {
    return;  // stopped or continued: not an end
  }
  if (p.closed) write_end(p, p.last_ns);  // else close() will write it
}

void ProcessTracker::write_end(const Process& p, int64_t end_ns) {
  storage::ProcessEndRow row;
  row.upid = p.upid;
  row.end_ns = end_ns;
  row.exit_status = p.exit_status;
  row.signal = p.signal;
  row.complete = p.complete;
  writer_.end_process(row);
}

int64_t ProcessTracker::utid(const Process& p, Threads& threads, uint32_t tid) {
  // Runs of events come from one thread: the last answer saves a lookup per event.
  if (threads.last_utid != 0 && tid == threads.last_tid) return threads.last_utid;
  auto [it, inserted] = threads.utids.try_emplace(tid, 0);
  if (inserted) {
    it->second = next_utid_++;
    writer_.add_thread(it->second, p.upid, tid);
    if (const std::optional<std::string> name = read_thread_name(p.pid, tid)) {
      writer_.set_thread_name(it->second, *name);
      threads.named.insert(tid);
    }
  }
  threads.last_tid = tid;
  threads.last_utid = it->second;
  return it->second;
}

void ProcessTracker::name_thread(const Process& p, Threads& threads, uint32_t tid,
                                 const std::string& name) {
  const int64_t id = utid(p, threads, tid);
  if (name.empty() || !threads.named.insert(tid).second) return;
  writer_.set_thread_name(id, name);
}

}  // namespace vramtrace::collector
