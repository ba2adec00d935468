// The shim's side of the transport: a sealed memfd ring per process, whose descriptor goes
// to the collector over the unix socket named by VRAMTRACE_SOCKET (SCM_RIGHTS). The socket
// stays open for the life of the process: the collector reads a hang-up as the process's
// end, and the shim reads one as the collector's. The collector writes nothing on it but the
// answers to live queries (proto/live_reply.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "live_reply.h"

namespace vramtrace::preload {

// The first bytes on the socket, sent with the memfd attached.
struct LinkHello {
  char magic[8];  // "VRTLINK1"
  uint32_t pid;
  uint32_t ring_version;
};

class CollectorLink {
 public:
  // Creates the ring (capacity bytes of data after the ring header), connects, and hands the
  // ring over. On failure returns false and *why names the step that failed.
  bool open(const char* socket_path, uint64_t capacity, uint32_t pid, const char** why);

  // The ring mapping (header page + data) once open() succeeded.
  void* ring() const { return ring_; }
  uint64_t capacity() const { return capacity_; }

  // False once the collector has closed its end of the socket, or once the program has
  // closed the socket itself (programs that close every descriptor do).
  bool collector_alive() const;
  // True once the program has closed the socket (or reused its number): the collector can no
  // longer be seen through it, though it goes on reading the ring (collector_server.h).
  bool socket_lost() const { return socket_fd_ >= 0 && !owns_socket(); }

  // Reads the answer to live query `query_id`, waiting at most `timeout_ms` in all; answers to
  // earlier queries (whose callers gave up) are read and dropped. The report's text goes to
  // `report` (at most `capacity` bytes, the rest read and dropped). False on timeout, on a
  // hang-up, or on an answer that does not read as one. Callers serialise (one reader).
  bool read_live_reply(uint64_t query_id, int timeout_ms, wire::LiveReplyHeader* header,
                       char* report, size_t capacity) const;

  // After fork, in the child: drops the parent's ring and socket without touching them (the
  // parent goes on using both).
  void abandon_after_fork();

 private:
  // Whether socket_fd_ is still our socket: the program may have closed it, and a descriptor
  // it opened since may have taken its number.
  bool owns_socket() const;

  int socket_fd_ = -1;
  uint64_t socket_dev_ = 0, socket_ino_ = 0;
  void* ring_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace vramtrace::preload
