#include "collector/collector_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "collector/process_exit.h"
#include "shm_ring.h"

namespace vramtrace::collector {
namespace {

// The first bytes a shim sends (preload/collector_link.h's LinkHello; the layout is part of
// the transport and versioned by its magic).
struct LinkHello {
  char magic[8];
  uint32_t pid;
  uint32_t ring_version;
};

// How long a turn waits for a busy writer's records to gather (poll_once).
constexpr long kGatherNs = 200'000;
constexpr size_t kRecordsPerTurn =
    16384;  // per ring, so that one busy process cannot starve others

std::string pick_runtime_dir(const std::string& requested) {
  if (!requested.empty()) return requested;
  for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0' && access(v, W_OK | X_OK) == 0) return v;
  }
  return "/tmp";
}

// The program a process runs now (/proc/PID/exe's target); empty where it cannot be read.
std::string program_of(pid_t pid) {
  char target[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = readlink(link.c_str(), target, sizeof target);
  return n > 0 && static_cast<size_t>(n) < sizeof target
             ? std::string(target, static_cast<size_t>(n))
             : std::string();
}

}  // namespace

struct CollectorServer::Connection {
  int fd = -1;
  int64_t ring_id = -1;  // -1 until the handshake arrived
  pid_t pid = 0;
  // The peer process itself (pidfd_open; -1 where the kernel has none): readable once it has
  // exited. A program may close the socket and run on; its ring is then read until it exits.
  int pidfd = -1;
  bool detached = false;  // the socket is gone (closed, or the process exec'd), the process not
  // Detached because the process exec'd another program (its exe is no longer the one it
  // announced): unless the new image connects, the shim was not loaded into it.
  bool exec_seen = false;
  void* mapping = nullptr;
  uint64_t mapped_bytes = 0;
  ring::RingConsumer consumer;
  bool corrupt = false;

  ~Connection() {
    if (mapping != nullptr) munmap(mapping, mapped_bytes);
    if (fd >= 0) close(fd);
    if (pidfd >= 0) close(pidfd);
  }

  bool process_exited() const {
    pollfd p{pidfd, POLLIN, 0};
    return pidfd < 0 || poll(&p, 1, 0) != 0;
  }
};

std::unique_ptr<CollectorServer> CollectorServer::create(TraceIngest& ingest,
                                                         const std::string& runtime_dir,
                                                         std::string* error) {
  std::string base = pick_runtime_dir(runtime_dir);
  std::string templ = base + "/vramtrace-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {  // mkdtemp makes it 0700
    *error = "cannot create a private directory in " + base + ": " + std::strerror(errno);
    return nullptr;
  }
  std::string path = templ + "/collector.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    rmdir(templ.c_str());
    *error = "socket path too long: " + path + " (set TMPDIR to a shorter directory)";
    return nullptr;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 128) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    unlink(path.c_str());
    rmdir(templ.c_str());
    return nullptr;
  }
  chmod(path.c_str(), 0600);
  return std::unique_ptr<CollectorServer>(new CollectorServer(ingest, fd, templ, path));
}

CollectorServer::CollectorServer(TraceIngest& ingest, int listen_fd, std::string dir,
                                 std::string socket_path)
    : ingest_(ingest),
      listen_fd_(listen_fd),
      dir_(std::move(dir)),
      socket_path_(std::move(socket_path)) {
  ingest_.set_reply_sink(
      [this](int64_t ring_id, const LiveQueries::Reply& reply) { send_reply(ring_id, reply); });
}

CollectorServer::~CollectorServer() {
  ingest_.set_reply_sink(nullptr);
  close_all();
  close(listen_fd_);
  unlink(socket_path_.c_str());
  rmdir(dir_.c_str());
}

void CollectorServer::send_reply(int64_t ring_id, const LiveQueries::Reply& reply) {
  Connection* c = nullptr;
  for (const auto& candidate : connections_)
    if (candidate->ring_id == ring_id && candidate->fd >= 0) c = candidate.get();
  if (c == nullptr) return;  // the process is gone, or closed its socket: nobody can read
  std::string bytes(reinterpret_cast<const char*>(&reply.header), sizeof reply.header);
  bytes += reply.report;
  // The answer is small and the socket's buffer empty unless the process stopped reading its
  // answers; wait a little for room rather than ever block the recording on it. A process
  // that gets half an answer finds the next one's magic wrong and reports no answer.
  size_t sent = 0;
  for (int waits = 0; sent < bytes.size() && waits < 10;) {
    const ssize_t n =
        send(c->fd, bytes.data() + sent, bytes.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{c->fd, POLLOUT, 0};
      poll(&p, 1, 10);
      ++waits;
      continue;
    }
    return;  // the process hung up: poll_once retires it
  }
}

void CollectorServer::accept_pending() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN: none left (or a transient error: next turn)
    ucred peer{};
    socklen_t len = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != getuid()) {
      ++refused_;
      close(fd);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->pid = peer.pid;
    c->pidfd = static_cast<int>(syscall(SYS_pidfd_open, peer.pid, 0));
    connections_.push_back(std::move(c));
  }
}

// Reads the handshake of a connection that has not sent it yet.
void CollectorServer::accept_one(size_t index) {
  Connection& c = *connections_[index];
  LinkHello hello{};
  iovec iov{&hello, sizeof hello};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(c.fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;

  int memfd = -1;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t fds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < fds; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (memfd < 0)
        memfd = fd;
      else
        close(fd);  // more than we asked for
    }
  }
  auto refuse = [&] {
    if (memfd >= 0) close(memfd);
    ++refused_;
    c.corrupt = true;  // retired on this turn, without a process
  };
  if (n != static_cast<ssize_t>(sizeof hello) || std::memcmp(hello.magic, "VRTLINK1", 8) != 0 ||
      hello.ring_version != ring::kVersion || memfd < 0 || (msg.msg_flags & MSG_CTRUNC) != 0)
    return refuse();

  // The ring must be sealed against shrinking, or the target could make our reads fault.
  const int seals = fcntl(memfd, F_GET_SEALS);
  struct stat st {};
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || fstat(memfd, &st) != 0 ||
      st.st_size < static_cast<off_t>(ring::kHeaderBytes + ring::kMinCapacity) ||
      st.st_size > static_cast<off_t>(ring::kHeaderBytes + ring::kMaxCapacity))
    return refuse();
  const auto bytes = static_cast<uint64_t>(st.st_size);
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  close(memfd);
  memfd = -1;
  if (mapping == MAP_FAILED) return refuse();
  const char* why = nullptr;
  if (!c.consumer.attach(mapping, bytes, &why)) {
    munmap(mapping, bytes);
    return refuse();
  }
  c.mapping = mapping;
  c.mapped_bytes = bytes;
  // The kernel's pid for the peer, not the one the handshake claims.
  c.ring_id = ingest_.open_ring(static_cast<uint32_t>(c.pid));
}

bool CollectorServer::drain(Connection& c, size_t max_records, size_t* delivered) {
  auto status = c.consumer.drain(
      [&](const ring::RecordHeader& h, const unsigned char* payload) {
        ingest_.on_record(c.ring_id, h, payload);
      },
      max_records, delivered);
  records_ += *delivered;
  if (status == ring::RingConsumer::Status::kCorrupt) {
    ingest_.ring_corrupt(c.ring_id);
    c.corrupt = true;
    return false;
  }
  return true;
}

void CollectorServer::retire(size_t index, bool hung_up) {
  Connection& c = *connections_[index];
  if (c.ring_id >= 0) {
    // Everything the process published before it went is in our mapping: read it all.
    size_t delivered = 0;
    while (!c.corrupt && drain(c, kRecordsPerTurn, &delivered) && delivered != 0) {
    }
    // A process that stopped recording ran on without it: whatever it did after is missing.
    const bool stopped = !c.corrupt && c.consumer.stopped() != 0;
    if (stopped) ingest_.recording_stopped(c.ring_id);
    const bool complete = !c.corrupt && hung_up && !stopped;
    ingest_.close_ring(c.ring_id, complete, ring::monotonic_ns(),
                       hung_up ? zombie_wait_status(c.pid) : std::nullopt);
  }
  connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(index));
}

size_t CollectorServer::poll_once(int timeout_ms) {
  std::vector<pollfd> fds;
  fds.reserve(connections_.size() + 1);
  fds.push_back({listen_fd_, POLLIN, 0});
  // A detached connection has no socket left: its process's exit is what ends it.
  for (auto& c : connections_) fds.push_back({c->detached ? c->pidfd : c->fd, POLLIN, 0});
  // A ring that had more than a turn's worth has a writer ahead of us, maybe one blocked on
  // the full ring: look at the sockets, but do not sleep. One that only got new records while
  // it was drained has a busy writer that we keep up with: let its records gather for
  // kGatherNs rather than take them a few at a time. Reading the ring's write position
  // between each of its records takes that line from the writer, whose next record must
  // fetch it back, and each turn's system calls cost as much as a few hundred records'
  // parsing. The sockets still wake us at once: a process's exit does not wait.
  timespec gather{0, kGatherNs};
  timespec wait{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  timespec none{0, 0};
  const timespec* timeout = rings_behind_      ? &none
                            : rings_backed_up_ ? &gather
                            : timeout_ms < 0   ? nullptr
                                               : &wait;
  int ready = ppoll(fds.data(), fds.size(), timeout, nullptr);
  if (ready < 0 && errno != EINTR) return 0;
  rings_backed_up_ = false;
  rings_behind_ = false;

  const size_t before = records_;
  // Drain first, then look at hang-ups: a process that published and exited within one
  // turn is read to its end by retire().
  std::vector<size_t> gone;
  for (size_t i = 0; i < connections_.size(); ++i) {
    Connection& c = *connections_[i];
    const short revents = ready > 0 ? fds[i + 1].revents : 0;
    if (c.ring_id < 0 && !c.corrupt && (revents & POLLIN) != 0) accept_one(i);
    if (c.ring_id >= 0 && !c.corrupt) {
      size_t delivered = 0;
      drain(c, kRecordsPerTurn, &delivered);
      if (!c.corrupt && c.consumer.pending_bytes() != 0) rings_backed_up_ = true;
      if (delivered == kRecordsPerTurn) rings_behind_ = true;
    }
    if (c.detached) {
      const bool replaced = replaced_by_exec(c);
      if (revents != 0 || c.corrupt || replaced) {
        // It ended in a program the shim never reached: LD_PRELOAD removed, or set-user-ID.
        if (!replaced && c.exec_seen) ingest_.exec_untraced(c.ring_id);
        gone.push_back(i);
      }
      continue;
    }
    bool hung_up = (revents & (POLLHUP | POLLERR)) != 0;
    if (!hung_up && c.ring_id >= 0 && (revents & POLLIN) != 0) {
      // The shim never writes after its handshake: readable now means end-of-file.
      char byte;
      ssize_t n = recv(c.fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
      hung_up = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
      if (n > 0) c.corrupt = true;  // a protocol violation; retired below
    }
    // A hang-up is the process's end, unless the process is still there and did not exit:
    // it closed the socket (programs that close every descriptor do) or exec'd. Its ring is
    // then read on until it exits or its new image connects.
    if (hung_up && !c.corrupt && c.ring_id >= 0 && !c.consumer.closed() && !c.process_exited()) {
      close(c.fd);
      c.fd = -1;
      c.detached = true;
      // After an exec the exe is the new program's already: the kernel closes the old image's
      // descriptors once the new one is in place. What the process ran before is what it
      // announced (the collector may only now have accepted its ring).
      const std::string announced = ingest_.program(c.ring_id);
      const std::string now = program_of(c.pid);
      c.exec_seen = !announced.empty() && !now.empty() && now != announced;
      continue;
    }
    if (hung_up || c.corrupt) gone.push_back(i);
  }
  for (size_t k = gone.size(); k-- > 0;) {
    Connection& c = *connections_[gone[k]];
    retire(gone[k], /*hung_up=*/!c.corrupt);
  }
  if (ready > 0 && (fds[0].revents & POLLIN) != 0) accept_pending();
  return records_ - before;
}

// After exec the process's new image connects with the same pid; the old image's ring will
// get nothing more. Connections are kept in the order they came: a later one of the same pid
// is a later image, even one that has since exec'd in its turn (and is detached too).
bool CollectorServer::replaced_by_exec(const Connection& detached) const {
  bool later = false;
  for (const auto& c : connections_) {
    if (c.get() == &detached) {
      later = true;
      continue;
    }
    if (later && c->pid == detached.pid) return true;
  }
  return false;
}

void CollectorServer::close_all() {
  accept_pending();
  for (size_t i = connections_.size(); i-- > 0;) {
    Connection& c = *connections_[i];
    if (c.ring_id < 0 && !c.corrupt) accept_one(i);
    if (c.detached && c.exec_seen && !replaced_by_exec(c)) ingest_.exec_untraced(c.ring_id);
    retire(i, /*hung_up=*/false);
  }
}

}  // namespace vramtrace::collector
