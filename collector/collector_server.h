// CollectorServer: the collector's side of the transport.
//
// Contract
// - It listens on a unix socket in a private directory (mode 0700, made with mkdtemp) and
//   accepts one connection per traced process. A connection's first message carries the
//   process's ring (a sealed memfd) as SCM_RIGHTS; the server checks the peer's uid
//   (SO_PEERCRED) against its own, the ring's seals and header, then maps it.
// - It drains every ring into a TraceIngest, from one thread (poll_once()).
// - A connection's hang-up means its process is gone (exit, exec, kill): the ring is drained
//   to the last published record, then unmapped. Records published before a SIGKILL are
//   therefore never lost: the server holds its own mapping of the memory. A process that
//   hung up without exiting (it closed the socket, or exec'd) keeps its ring read until it
//   exits (its pidfd says so) or its new image connects.
// - Rings are untrusted input (see shm_ring.h). A ring that turns out corrupt is dropped
//   and counted; the others go on.
// - The only thing it writes to a connection is the answer to a live query (live_query.h,
//   proto/live_reply.h), without ever blocking on it: a process that does not read its
//   answers loses them, never the recording.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collector/trace_ingest.h"

namespace vramtrace::collector {

class CollectorServer {
 public:
  // Makes the private directory and the listening socket under `runtime_dir` (empty: from
  // $XDG_RUNTIME_DIR, $TMPDIR or /tmp). Returns nullptr with *error set on failure.
  static std::unique_ptr<CollectorServer> create(TraceIngest& ingest,
                                                 const std::string& runtime_dir,
                                                 std::string* error);
  ~CollectorServer();
  CollectorServer(const CollectorServer&) = delete;
  CollectorServer& operator=(const CollectorServer&) = delete;

  // The path to put in VRAMTRACE_SOCKET.
  const std::string& socket_path() const { return socket_path_; }

  // Accepts new connections, drains the rings, retires the processes that hung up. Waits at
  // most `timeout_ms` for something to happen, and not at all while a ring is backed up.
  // Returns the number of records read.
  size_t poll_once(int timeout_ms);

  // Processes connected and not yet gone.
  size_t open_connections() const { return connections_.size(); }

  // Drains and retires every connection now, whether its process has ended or not (used at
  // the end of a recording for processes that outlive the traced command).
  void close_all();

  // Records read so far, over all rings.
  uint64_t records() const { return records_; }
  // Connections refused (another uid, a bad handshake, a bad ring).
  uint64_t refused() const { return refused_; }

 private:
  struct Connection;
  CollectorServer(TraceIngest& ingest, int listen_fd, std::string dir, std::string socket_path);
  void accept_pending();
  void accept_one(size_t index);  // reads the handshake
  // Returns false when the ring cannot be read on.
  bool drain(Connection& c, size_t max_records, size_t* delivered);
  void retire(size_t index, bool hung_up);
  bool replaced_by_exec(const Connection& detached) const;
  // Sends the answer to a live query (live_query.h) on the ring's connection.
  void send_reply(int64_t ring_id, const LiveQueries::Reply& reply);

  TraceIngest& ingest_;
  int listen_fd_;
  std::string dir_;
  std::string socket_path_;
  std::vector<std::unique_ptr<Connection>> connections_;
  uint64_t records_ = 0;
  bool rings_backed_up_ = false;  // a ring still held records at the end of the last turn
  bool rings_behind_ = false;     // a ring had more than a turn's worth in the last turn
  uint64_t refused_ = 0;
};

}  // namespace vramtrace::collector
