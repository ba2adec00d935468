#include "recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "collector_link.h"
#include "cuda_abi.h"
#include "frame_rule_cache.h"
#include "job_identity.h"
#include "module_map.h"
#include "nanopb/vramtrace.pb.h"
#include "python_stack.h"
#include "real_functions.h"
#include "reentry_guard.h"
#include "ring_size.h"
#include "shim_log.h"
#include "shim_markers.h"
#include "shm_ring.h"
#include "stack_names.h"
#include "unwinder.h"

namespace vramtrace::preload {

constinit thread_local bool t_inside_shim __attribute__((tls_model("initial-exec"))) = false;
std::atomic<int> g_shim_state{static_cast<int>(ShimState::kOff)};
std::atomic<bool> g_started{false};

namespace {

thread_local uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
// Whether this thread's name went ahead of its first event (say_thread_name_once).
thread_local constinit bool t_name_said __attribute__((tls_model("initial-exec"))) = false;
// Inside write_record, from before the ring's lock is asked for until after it is given back.
thread_local constinit bool t_ring_write __attribute__((tls_model("initial-exec"))) = false;

// Process-wide state. Plain globals with constant initialisation: they must be usable from
// hooks that run before or during other libraries' constructors.
Unwinder g_unwinder;
CollectorLink g_link;
ring::RingProducer g_ring;
ModuleMap g_modules;
pthread_mutex_t g_modules_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<void*> g_real_cudaGetDevice{nullptr};
// Moves each time the module map is rescanned: the Python stack capture looks for an
// interpreter again only then.
std::atomic<uint64_t> g_loader_generation{0};
char g_socket_path[256];
uint64_t g_ring_bytes = ring::kDefaultCapacity;
int g_backend = vramtrace_wire_Backend_BACKEND_PRELOAD;
// VRAMTRACE_FREE_STACKS=1: a stack for every free too. Off by default, as heaptrack and memray
// do: it doubles the unwinding (and the Python walk) of a program's allocations for a column
// few questions need; a free that fails still gets its stack (record_free_failed).
bool g_free_stacks = false;
// Whether this process's "python finalizing" marker is on the ring (say_if_python_finalizing).
std::atomic<bool> g_finalizing_said{false};
// Records stamped by the time-stamp counter (record_clock.h): where the kernel keeps time by it,
// unless VRAMTRACE_CLOCK=monotonic asks for clock_gettime at every record.
bool g_tsc_clock = false;
bool tsc_clock_wanted() {
  const char* clock = getenv("VRAMTRACE_CLOCK");
  return (clock == nullptr || std::strcmp(clock, "monotonic") != 0) &&
         ring::tsc_is_the_kernels_clock();
}

}  // namespace

uint32_t current_tid() {
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

namespace {

// Ends recording for good (in this process); says why once, on stderr and in the ring's header,
// where the collector finds it even when the ring cannot take another record.
void stop_recording(ring::StopReason reason, const char* why) {
  int expected = static_cast<int>(ShimState::kRecording);
  if (g_shim_state.compare_exchange_strong(expected, static_cast<int>(ShimState::kStopped))) {
    g_ring.mark_stopped(reason);
    shim_log(why, "; recording stopped, the program continues untraced");
  }
}

}  // namespace

namespace {

// Asked while a writer waits for room in the ring (under the ring's lock: one caller at a
// time). The socket tells whether the collector is there; once the program has closed it, only
// the reader's progress can, and the ring itself gives up on a reader that has not advanced for
// its stall limit (VRAMTRACE_STALL_SECONDS, 10 s by default), socket or not.
bool collector_still_reading() {
  return g_link.socket_lost() || g_link.collector_alive();
}

int64_t g_stall_ns = ring::kDefaultStallNs;

int64_t parse_stall_ns(const char* text) {
  if (text == nullptr || *text == '\0') return ring::kDefaultStallNs;
  char* end = nullptr;
  errno = 0;
  const unsigned long long seconds = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || seconds == 0 || seconds > 86'400)
    return ring::kDefaultStallNs;
  return static_cast<int64_t>(seconds) * 1'000'000'000;
}

// Why recording stopped on a stalled reader, with the stall limit in seconds.
const char* stalled_text() {
  static constexpr char kBefore[] = "the collector has not read this process's events for ";
  static constexpr char kAfter[] = " s (stopped?)";
  static char text[sizeof kBefore + 24 + sizeof kAfter];
  char digits[24];
  int n = 0;
  for (uint64_t s = static_cast<uint64_t>(g_ring.stall_limit_ns() / 1'000'000'000); n == 0 || s;
       s /= 10)
    digits[n++] = static_cast<char>('0' + s % 10);
  size_t at = sizeof kBefore - 1;
  std::memcpy(text, kBefore, at);
  while (n > 0) text[at++] = digits[--n];
  std::memcpy(text + at, kAfter, sizeof kAfter);
  return text;
}

// Puts one record on the ring, nothing more.
uint64_t write_now(const uint8_t* payload, size_t bytes) {
  if (bytes == 0) {
    stop_recording(ring::StopReason::kInternalError, "internal error: an event did not encode");
    return 0;
  }
  uint64_t seq = 0;
  t_ring_write = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  auto result = g_ring.write(payload, static_cast<uint32_t>(bytes), &seq,
                             [] { return collector_still_reading(); });
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_ring_write = false;
  switch (result) {
    case ring::RingProducer::WriteResult::kOk:
      return seq;
    case ring::RingProducer::WriteResult::kTooLarge:
      stop_recording(ring::StopReason::kInternalError,
                     "internal error: an event is larger than the ring");
      return 0;
    case ring::RingProducer::WriteResult::kGaveUp:
      stop_recording(ring::StopReason::kReaderGone, "the collector went away");
      return 0;
    case ring::RingProducer::WriteResult::kStalled:
      stop_recording(ring::StopReason::kStalled, stalled_text());
      return 0;
    case ring::RingProducer::WriteResult::kHeaderOverwritten:
      stop_recording(ring::StopReason::kHeaderOverwritten,
                     "the ring's header was overwritten (the program wrote over vramtrace's "
                     "shared memory)");
      return 0;
  }
  return 0;
}

std::atomic<bool (*)(FreeEvent*)> g_deferred_frees{nullptr};
std::atomic<uint64_t> g_unrecorded_calls{0};
std::atomic<uint64_t> g_unrecorded_said{0};

uint64_t write_nested_free(FreeEvent e) {
  e.tid = current_tid();
  e.nested = true;
  uint8_t buf[kMaxEventBytes];
  return write_now(buf, encode_free(e, Stack{}, buf, sizeof buf));
}

// Whether this thread is writing its deferred frees: a signal handler that interrupts it leaves
// them to it (its own, deferred, included), so that the queue has one consumer at a time.
thread_local constinit bool t_writing_deferred __attribute__((tls_model("initial-exec"))) = false;

void write_deferred_frees() {
  auto pop = g_deferred_frees.load(std::memory_order_relaxed);
  if (pop == nullptr || t_writing_deferred) return;
  t_writing_deferred = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  FreeEvent e;
  while (pop(&e)) write_nested_free(e);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_writing_deferred = false;
}

// What a write leaves to do once the ring's lock is given back: the frees a signal handler
// deferred while this thread was inside the write, then the count of calls not recorded.
void after_write() {
  write_deferred_frees();
  const uint64_t unrecorded = g_unrecorded_calls.load(std::memory_order_relaxed);
  uint64_t said = g_unrecorded_said.load(std::memory_order_relaxed);
  if (unrecorded == said || !g_unrecorded_said.compare_exchange_strong(said, unrecorded)) return;
  uint8_t buf[512];
  write_now(buf,
            encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_DATA_LOSS, "calls_unrecorded",
                          "allocation calls that a signal handler made while the shim was "
                          "inside a hook on the same thread, and frees of such handlers "
                          "that found the shim's queue of deferred frees full: not recorded",
                          buf, sizeof buf, unrecorded - said));
  write_deferred_frees();  // any a handler made during the notice's write
}

}  // namespace

uint64_t write_record(const uint8_t* payload, size_t bytes) {
  const uint64_t seq = write_now(payload, bytes);
  after_write();
  return seq;
}

bool inside_ring_write() {
  return t_ring_write;
}

void set_deferred_free_source(bool (*pop)(FreeEvent* out)) {
  g_deferred_frees.store(pop, std::memory_order_relaxed);
}

void count_unrecorded_call() {
  g_unrecorded_calls.fetch_add(1, std::memory_order_relaxed);
}

uint64_t record_nested_free(FreeEvent e) {
  const uint64_t seq = write_nested_free(e);
  after_write();
  return seq;
}

void record_nested_free_failed(uint64_t free_seq, int32_t result) {
  uint8_t buf[64];
  write_record(buf, encode_free_failed(free_seq, result, Stack{}, buf, sizeof buf));
}

bool read_live_reply(uint64_t query_id, int timeout_ms, wire::LiveReplyHeader* header, char* report,
                     size_t capacity) {
  if (!is_recording()) return false;
  return g_link.read_live_reply(query_id, timeout_ms, header, report, capacity);
}

namespace {

// What the walks had done when the loader was last asked for new objects: the count of frame
// rules read (frame_rules_read()) and of stacks libunwind walked. kNotAsked: ask at the next
// event.
constexpr uint64_t kNotAsked = ~0ull;
std::atomic<uint64_t> g_rules_read_when_asked{kNotAsked};
std::atomic<uint64_t> g_declined_when_asked{kNotAsked};

// Whether the stack just captured may point into an object loaded since the loader was last
// asked. A walk by frame rules meets a frame of an object it has not met before only by reading
// that frame's rule: when no thread read a rule (and libunwind walked nothing) since then, every
// frame's object was loaded, and so sent, before. Asking the loader (dl_iterate_phdr, under
// its lock) at every event cost more than a tenth of the shim's time per allocation.
bool stack_may_point_into_new_objects(uint64_t rules_read, uint64_t declined) {
  if (!g_unwinder.walks_by_frame_rules()) return true;
  return rules_read != g_rules_read_when_asked.load(std::memory_order_acquire) ||
         declined != g_declined_when_asked.load(std::memory_order_acquire);
}

// Sends the modules loaded since the last scan. After the event's stack was captured and before
// its record, so that the collector knows every object the stack points into.
void send_new_modules() {
  // Read before the loader is asked: a rule read after this is asked about at the next event.
  const uint64_t rules_read = frame_rules_read();
  const uint64_t declined = g_unwinder.declined_walks();
  if (!stack_may_point_into_new_objects(rules_read, declined)) return;
  if (g_modules.changed()) {
    pthread_mutex_lock(&g_modules_mutex);
    g_loader_generation.fetch_add(1, std::memory_order_relaxed);
    // Also catches an unload the dlclose hook did not see (the loader's own, or libc's).
    forget_frame_rules_after_unloads(loader_unload_count());
    g_modules.scan([](const ModuleInfo& m) {
      uint8_t buf[kMaxEventBytes + 256];
      return write_record(buf, encode_module(m, buf, sizeof buf)) != 0;
    });
    pthread_mutex_unlock(&g_modules_mutex);
  }
  // Stored once the modules are on the ring: a thread that skips the scan on the strength of
  // these finds what it needs ahead of its own record. A store racing with another thread's
  // may leave older counts, which only makes the next event ask again.
  g_rules_read_when_asked.store(rules_read, std::memory_order_release);
  g_declined_when_asked.store(declined, std::memory_order_release);
}

// A forked child asks the loader afresh: its module map starts empty.
void ask_loader_at_next_event() {
  g_rules_read_when_asked.store(kNotAsked, std::memory_order_relaxed);
  g_declined_when_asked.store(kNotAsked, std::memory_order_relaxed);
}

// `vramtrace run` checks the value before it passes it on; a value set by hand that is not a
// size is said once, and the default ring is used.
uint64_t ring_bytes_from(const char* text) {
  if (text == nullptr) return ring::kDefaultCapacity;
  const ring::RingSize size = ring::parse_ring_size(text);
  if (size.problem == ring::RingSizeProblem::kNone) return size.bytes;
  shim_log("VRAMTRACE_RING_BYTES is ", ring::ring_size_problem_text(size.problem),
           "; the default ring is used");
  return ring::kDefaultCapacity;
}

void send_process_start() {
  static char cmdline[16384];
  static char exe[4096];
  static char host[256];
  size_t cmdline_bytes = 0;
  bool cmdline_cut = false;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n;
    while (cmdline_bytes < sizeof cmdline &&
           (n = read(fd, cmdline + cmdline_bytes, sizeof cmdline - cmdline_bytes)) > 0)
      cmdline_bytes += static_cast<size_t>(n);
    // More than fits: keep the whole arguments before the one cut, and say so.
    char more;
    if (cmdline_bytes == sizeof cmdline && read(fd, &more, 1) == 1) {
      cmdline_cut = true;
      while (cmdline_bytes > 0 && cmdline[cmdline_bytes - 1] != '\0') --cmdline_bytes;
    }
    close(fd);
  }
  ssize_t exe_bytes = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[exe_bytes > 0 ? exe_bytes : 0] = '\0';
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);

  ProcessStartInfo info{};
  info.pid = static_cast<uint32_t>(getpid());
  info.ppid = static_cast<uint32_t>(getppid());
  info.uid = static_cast<uint32_t>(getuid());
  info.start_realtime_ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec;
  info.exe = exe;
  info.argv = cmdline;
  info.argv_bytes = cmdline_bytes;
  info.argv_cut = cmdline_cut;
  info.hostname = host;
  info.unwinder = g_unwinder.name();
  read_job_identity(&info);
  info.backend = g_backend;
  static uint8_t buf[sizeof cmdline + sizeof exe + sizeof host + 256];
  write_record(buf, encode_process_start(info, buf, sizeof buf));
}

// Connects this process (the first one, or a forked child) to the collector.
void connect_process() {
  const char* why = nullptr;
  if (!g_link.open(g_socket_path, g_ring_bytes, static_cast<uint32_t>(getpid()), &why)) {
    g_shim_state.store(static_cast<int>(ShimState::kStopped));
    shim_log("cannot reach the collector (", why, "); the program runs untraced");
    return;
  }
  g_ring.init(g_link.ring(), g_link.capacity(), static_cast<uint32_t>(getpid()), g_tsc_clock);
  g_ring.set_stall_limit_ns(g_stall_ns);
  // The process's start is its ring's first record: no event, not even a signal handler's free
  // (hook_support.h), may precede it.
  send_process_start();
  g_shim_state.store(static_cast<int>(ShimState::kRecording));
}

// Stacks the walk by frame rules declined (libunwind walked them): the first is said at once,
// so that a process killed later still shows it, the rest are counted and said at exit.
std::atomic<uint64_t> g_declined_walks_said{0};

void say_declined_walks(bool at_exit) {
  const uint64_t declined = g_unwinder.declined_walks();
  uint64_t said = g_declined_walks_said.load(std::memory_order_relaxed);
  if (declined == said || (!at_exit && said != 0)) return;
  if (!g_declined_walks_said.compare_exchange_strong(said, declined)) return;
  uint8_t buf[512];
  write_record(
      buf, encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_INFO, "native_stack_by_libunwind",
                         "native stacks that the shim's walk by frame rules declined (a "
                         "signal frame, code without call frame information such as "
                         "JIT code, a stack not the thread's own), walked by libunwind "
                         "instead: the same frames, at several times the cost",
                         buf, sizeof buf, declined - said));
}

// At exit: how often and how long the program waited on a full ring, said only when it did.
void say_ring_waits() {
  const uint64_t waits = g_ring.full_waits();
  if (waits == 0) return;
  uint8_t buf[512];
  write_record(buf, encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_INFO, "ring_full_waits",
                                  "writes that found the process's ring full and waited for the "
                                  "collector: the program ran at the collector's pace (a larger "
                                  "--ring-size absorbs a longer burst)",
                                  buf, sizeof buf, waits));
  const uint64_t ms = (g_ring.full_wait_ns() + 999'999) / 1'000'000;
  write_record(buf, encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_INFO, "ring_full_wait_ms",
                                  "milliseconds the process's writes waited on a full ring, in "
                                  "all threads together",
                                  buf, sizeof buf, ms));
}

void on_process_exit(int status, void*) {
  if (!is_recording()) return;
  ReentryGuard guard;
  // exit() called by a signal handler that interrupted the shim on this thread: the ring's
  // lock may be held beneath us, and waiting for it would hang the program. The exit record
  // is left out; the collector learns the status from whoever waits for the process.
  if (!guard.outermost()) return;
  say_declined_walks(true);
  say_ring_waits();
  uint8_t buf[64];
  write_record(buf, encode_process_exit(status, buf, sizeof buf));
  g_ring.mark_closed();
  // Recording goes on: libraries' destructors run after this and may still free memory.
}

void before_fork() {
  pthread_mutex_lock(&g_modules_mutex);
}
void after_fork_in_parent() {
  pthread_mutex_unlock(&g_modules_mutex);
}
void after_fork_in_child() {
  pthread_mutex_unlock(&g_modules_mutex);
  t_tid = 0;
  t_name_said = false;
  const bool was_recording = is_recording();
  g_link.abandon_after_fork();
  g_modules.reset();
  ask_loader_at_next_event();
  forget_sent_python_code();
  g_finalizing_said.store(false, std::memory_order_relaxed);
  g_unwinder.forget_declined_walks();
  forget_stack_names_after_fork();
  g_declined_walks_said.store(0, std::memory_order_relaxed);
  g_unrecorded_calls.store(0, std::memory_order_relaxed);
  g_unrecorded_said.store(0, std::memory_order_relaxed);
  g_shim_state.store(static_cast<int>(ShimState::kOff));
  if (was_recording) {
    ReentryGuard guard;
    connect_process();
  }
}

}  // namespace

void shim_start() {
  if (g_started.exchange(true)) return;
  ReentryGuard guard;
  const char* socket_path = getenv("VRAMTRACE_SOCKET");
  if (socket_path == nullptr || *socket_path == '\0') return;
  if (std::strlen(socket_path) >= sizeof g_socket_path) {
    shim_log("VRAMTRACE_SOCKET is too long; the program runs untraced");
    return;
  }
  std::strcpy(g_socket_path, socket_path);
  g_ring_bytes = ring_bytes_from(getenv("VRAMTRACE_RING_BYTES"));
  g_stall_ns = parse_stall_ns(getenv("VRAMTRACE_STALL_SECONDS"));
  const char* free_stacks = getenv("VRAMTRACE_FREE_STACKS");
  g_free_stacks = free_stacks != nullptr && std::strcmp(free_stacks, "1") == 0;
  const char* stack_names = getenv("VRAMTRACE_STACK_NAMES");
  set_stack_names_enabled(stack_names == nullptr || std::strcmp(stack_names, "0") != 0);
  g_tsc_clock = tsc_clock_wanted();
  const char* unwinder = getenv("VRAMTRACE_UNWINDER");
  g_unwinder.init(unwinder == nullptr || std::strcmp(unwinder, "libunwind") != 0);
  pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
  on_exit(&on_process_exit, nullptr);
  connect_process();
}

bool skip_innermost_frames_of(const void* address) {
  return g_unwinder.skip_innermost_object(address);
}

void set_backend(int backend) {
  g_backend = backend;
}

bool attach_ring_for_testing(void* mapping, uint64_t capacity) {
  g_unwinder.init();
  g_tsc_clock = tsc_clock_wanted();
  if (!g_ring.init(mapping, capacity, static_cast<uint32_t>(getpid()), g_tsc_clock)) return false;
  g_started.store(true);
  g_shim_state.store(static_cast<int>(ShimState::kRecording));
  return true;
}

namespace {
bool write_python_message(const uint8_t* payload, size_t bytes) {
  return write_record(payload, bytes) != 0;
}

// The record path: stacks first (before any lock of the shim's; the Python walk sends the code
// objects it meets for the first time), then the encoding, then the modules the native stack may
// point into, then the event itself.
// The native and Python stacks of the calling thread, captured before any lock of the shim's
// is taken (the Python walk sends the code objects it meets for the first time).
struct CapturedStack {
  uintptr_t ips[kMaxStackDepth];
  bool truncated = false;
  int depth = 0;
  uint64_t walk_id = 0;
  PythonFrames python;

  void capture() {
    depth = g_unwinder.capture(ips, kMaxStackDepth, &truncated, &walk_id);
    say_declined_walks(false);
    capture_python_stack(&python, g_loader_generation.load(std::memory_order_relaxed),
                         &write_python_message);
  }
  // The stack to send, named (stack_names.h). Call after send_new_modules(): the modules its
  // frames point into must reach the collector before a definition of its name.
  Stack named_stack() const {
    Stack s{ips, depth, truncated, &python};
    // capture() gave at most the wire's limit
    const StackName n = name_stack(ips, depth, &python, walk_id);
    s.name = n.name;
    s.same_as = n.same_as;
    return s;
  }
};

// Once per process, before the first event after its Python interpreter began to finalize: a
// marker saying so, so that the reports can tell what the program still held when its own code
// ended from what it had freed (the teardown frees the rest). Written here, on the record path,
// because the teardown's first event may be a free, and a free carries no stack to look from.

void say_if_python_finalizing(uint32_t tid) {
  if (g_finalizing_said.load(std::memory_order_relaxed) || !python_is_finalizing()) return;
  if (g_finalizing_said.exchange(true)) return;
  MarkerEvent marker{};
  marker.tid = tid;
  marker.type = vramtrace_wire_Marker_Type_TYPE_MARK;
  marker.source = vramtrace_wire_Marker_Source_SOURCE_SHIM;
  marker.domain = "";
  marker.name = wire_markers::kPythonFinalizing;
  uint8_t buf[128];
  write_record(buf, encode_marker(marker, buf, sizeof buf));
}

// Once per thread, before its first allocation or free: its name, which the collector cannot
// read from /proc once the process has ended (it may reach a short program's last events only
// then). One prctl a thread.
void say_thread_name_once(uint32_t tid) {
  if (t_name_said) return;
  t_name_said = true;
  char name[17] = {};
  if (prctl(PR_GET_NAME, name) != 0 || name[0] == '\0') return;
  uint8_t buf[64];
  write_record(buf, encode_thread_name(tid, name, buf, sizeof buf));
}

// The record path: the stack, then the modules it may point into, then the event itself.
template <class Event>
uint64_t record_event(Event& e, size_t (*encode)(const Event&, const Stack&, uint8_t*, size_t)) {
  CapturedStack captured;
  captured.capture();
  e.tid = current_tid();
  say_thread_name_once(e.tid);
  say_if_python_finalizing(e.tid);
  send_new_modules();
  uint8_t buf[kMaxEventBytes];
  return write_record(buf, encode(e, captured.named_stack(), buf, sizeof buf));
}
}  // namespace

void prepare_to_record() {
  g_ring.prepare_to_write();
}

namespace {

std::atomic<void*> g_real_cuMemGetInfo{nullptr};

// A failure for lack of memory: the device's free and total bytes right after it, as the driver
// gives them to whoever asks (torch asks the same just before it raises, for its message). The
// driver's call, so that runtime, driver and PyTorch failures are answered alike; it reads the
// current context and changes nothing.
void add_device_memory(AllocEvent& e) {
  using MemGetInfoFn = int (*)(size_t*, size_t*);
  auto get = real_function<MemGetInfoFn>(g_real_cuMemGetInfo, "cuMemGetInfo_v2", "libcuda.so");
  size_t free_bytes = 0, total_bytes = 0;
  if (get == nullptr || get(&free_bytes, &total_bytes) != 0) return;
  e.has_device_memory = true;
  e.device_free = free_bytes;
  e.device_total = total_bytes;
}

}  // namespace

void record_alloc(AllocEvent& e) {
  constexpr int32_t kOutOfMemory = 2;  // cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY
  if (e.result == kOutOfMemory && !e.has_device_memory) add_device_memory(e);
  record_event(e, &encode_alloc);
}

uint64_t record_free(FreeEvent& e) {
  if (g_free_stacks) return record_event(e, &encode_free);
  e.tid = current_tid();
  say_thread_name_once(e.tid);
  say_if_python_finalizing(e.tid);
  uint8_t buf[kMaxEventBytes];
  return write_record(buf, encode_free(e, Stack{}, buf, sizeof buf));
}

void record_free_failed(uint64_t free_seq, int32_t result) {
  if (g_free_stacks) {
    uint8_t buf[64];
    write_record(buf, encode_free_failed(free_seq, result, Stack{}, buf, sizeof buf));
    return;
  }
  // The free went without a stack; its failure is worth one. The hook that called us is the
  // same frame that recorded the free.
  CapturedStack captured;
  captured.capture();
  send_new_modules();
  uint8_t buf[kMaxEventBytes];
  write_record(buf, encode_free_failed(free_seq, result, captured.named_stack(), buf, sizeof buf));
}

int32_t current_device() {
#define VRAMTRACE_FN_TYPE(name, same_as, params) using name##_fn = cuda::vt_cudaError_t(*) params;
  VRAMTRACE_CUDA_RUNTIME_USED(VRAMTRACE_FN_TYPE)
#undef VRAMTRACE_FN_TYPE
  auto get_device =
      real_function<cudaGetDevice_fn>(g_real_cudaGetDevice, "cudaGetDevice", "libcudart.so");
  int device = -1;
  if (get_device == nullptr || get_device(&device) != cuda::kSuccess) return -1;
  return device;
}

}  // namespace vramtrace::preload
