#include "collector_link.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "shm_ring.h"

namespace vramtrace::preload {
namespace {

bool fail(const char** why, const char* reason) {
  *why = reason;
  return false;
}

}  // namespace

bool CollectorLink::open(const char* socket_path, uint64_t capacity, uint32_t pid,
                         const char** why) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(socket_path) >= sizeof addr.sun_path) return fail(why, "socket path too long");
  std::strcpy(addr.sun_path, socket_path);

  // A file-size limit (ulimit -f, common on clusters) applies to the memfd too, and growing
  // it past the limit raises SIGXFSZ, which kills the program: take the largest ring that
  // fits, or none.
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    while (capacity > ring::kMinCapacity && ring::kHeaderBytes + capacity > limit.rlim_cur)
      capacity /= 2;
    if (ring::kHeaderBytes + capacity > limit.rlim_cur)
      return fail(why, "the file-size limit (ulimit -f) is smaller than the smallest ring");
  }
  const uint64_t bytes = ring::kHeaderBytes + capacity;
  int memfd = memfd_create("vramtrace-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0) return fail(why, "memfd_create failed");
  // Sealed against shrinking: the collector maps it too, and a shrunk file would make its
  // reads fault.
  if (ftruncate(memfd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(memfd);
    return fail(why, "cannot size the ring");
  }
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (mapping == MAP_FAILED) {
    close(memfd);
    return fail(why, "cannot map the ring");
  }
  ring::RingProducer init;
  if (!init.init(mapping, capacity, pid)) {
    munmap(mapping, bytes);
    close(memfd);
    return fail(why, "invalid ring size");
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) close(fd);
    munmap(mapping, bytes);
    close(memfd);
    return fail(why, "cannot connect to the collector");
  }

  LinkHello hello{};
  std::memcpy(hello.magic, "VRTLINK1", 8);
  hello.pid = pid;
  hello.ring_version = ring::kVersion;
  iovec iov{&hello, sizeof hello};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &memfd, sizeof memfd);
  ssize_t sent;
  do {
    sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  close(memfd);  // the mapping keeps the memory; the collector has its own descriptor
  if (sent != static_cast<ssize_t>(sizeof hello)) {
    close(fd);
    munmap(mapping, bytes);
    return fail(why, "cannot hand the ring to the collector");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    munmap(mapping, bytes);
    return fail(why, "cannot identify the socket");
  }
  socket_fd_ = fd;
  socket_dev_ = st.st_dev;
  socket_ino_ = st.st_ino;
  ring_ = mapping;
  capacity_ = capacity;
  return true;
}

bool CollectorLink::owns_socket() const {
  struct stat st {};
  return socket_fd_ >= 0 && fstat(socket_fd_, &st) == 0 && st.st_dev == socket_dev_ &&
         st.st_ino == socket_ino_;
}

// Called only while a writer waits for space, so the fstat costs nothing on the record path.
// Without it, a program that closed the socket and made a pipe on its number would look like
// a live collector for ever, and the writer would wait for ever: the collector took the
// hang-up for the end of the process and no longer reads the ring.
bool CollectorLink::collector_alive() const {
  if (!owns_socket()) return false;
  // Readable is not enough to tell: an answer to a live query may be waiting. The collector's
  // hang-up shows as POLLRDHUP (it shut its end) even while such an answer is unread.
  pollfd p{socket_fd_, POLLRDHUP, 0};
  int n = poll(&p, 1, 0);
  if (n < 0) return errno == EINTR;
  return n == 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
}

namespace {

uint64_t now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000 + static_cast<uint64_t>(t.tv_nsec) / 1000000;
}

// Reads exactly `bytes` into `out` (nullptr: reads and drops them) before `deadline_ms`.
bool read_exactly(int fd, void* out, size_t bytes, uint64_t deadline_ms) {
  char sink[512];
  size_t done = 0;
  while (done < bytes) {
    const uint64_t now = now_ms();
    if (now >= deadline_ms) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(deadline_ms - now));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char* to = out != nullptr ? static_cast<char*>(out) + done : sink;
    const size_t want = out != nullptr ? bytes - done : std::min(bytes - done, sizeof sink);
    const ssize_t n = recv(fd, to, want, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return false;  // the collector hung up, or an error
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool CollectorLink::read_live_reply(uint64_t query_id, int timeout_ms,
                                    wire::LiveReplyHeader* header, char* report,
                                    size_t capacity) const {
  if (!owns_socket()) return false;
  const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms < 0 ? 0 : timeout_ms);
  for (;;) {
    if (!read_exactly(socket_fd_, header, sizeof *header, deadline)) return false;
    if (std::memcmp(header->magic, wire::kLiveReplyMagic, sizeof header->magic) != 0 ||
        header->report_bytes > wire::kMaxLiveReportBytes)
      return false;  // not an answer: nothing after it can be trusted to be one either
    const bool ours = header->query_id == query_id;
    const size_t kept = ours ? std::min<size_t>(header->report_bytes, capacity) : 0;
    if (kept > 0 && !read_exactly(socket_fd_, report, kept, deadline)) return false;
    if (!read_exactly(socket_fd_, nullptr, header->report_bytes - kept, deadline)) return false;
    if (ours) return true;
  }
}

void CollectorLink::abandon_after_fork() {
  if (owns_socket()) close(socket_fd_);  // never a descriptor the program reopened
  if (ring_ != nullptr) munmap(ring_, ring::kHeaderBytes + capacity_);
  socket_fd_ = -1;
  ring_ = nullptr;
  capacity_ = 0;
}

}  // namespace vramtrace::preload
