// Hooks for the wait family (waitpid, wait, wait3, wait4, waitid): when a traced process reaps a
// child, it tells the collector how that child ended. A process that dies by _exit, abort or
// a fatal signal cannot say so itself, and the collector is not the parent of most processes
// of a job; the parent, traced too, is the one that learns the exit status.
//
// Each hook forwards to glibc's function and returns its result unchanged. A wait may run in
// a SIGCHLD handler; one that interrupts the shim on its own thread passes through unrecorded
// (the re-entrancy guard), so the handler can never wait on the ring's lock held beneath it.
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <atomic>

#include "real_functions.h"
#include "recorder.h"
#include "reentry_guard.h"

namespace {

using vramtrace::preload::ReentryGuard;

std::atomic<void*> g_real_waitpid{nullptr};
std::atomic<void*> g_real_wait4{nullptr};
std::atomic<void*> g_real_waitid{nullptr};

void report(pid_t pid, int status) {
  if (pid <= 0 || !(WIFEXITED(status) || WIFSIGNALED(status))) return;
  uint8_t buf[64];
  vramtrace::preload::write_record(buf, vramtrace::preload::encode_child_exit(
                                            static_cast<uint32_t>(pid), status, buf, sizeof buf));
}

template <class Fn>
Fn real(std::atomic<void*>& slot, const char* name) {
  return vramtrace::preload::real_function<Fn>(slot, name, "libc.so");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) pid_t waitpid(pid_t pid, int* wstatus,
                                                                int options) {
  auto fn = real<pid_t (*)(pid_t, int*, int)>(g_real_waitpid, "waitpid");
  int local = 0;
  int* status = wstatus != nullptr ? wstatus : &local;
  const pid_t reaped = fn(pid, status, options);
  ReentryGuard guard;
  if (reaped > 0 && guard.outermost() && vramtrace::preload::is_recording())
    report(reaped, *status);
  return reaped;
}

extern "C" __attribute__((visibility("default"))) pid_t wait(int* wstatus) {
  return waitpid(-1, wstatus, 0);
}

extern "C" __attribute__((visibility("default"))) pid_t wait4(pid_t pid, int* wstatus, int options,
                                                              struct rusage* usage) {
  auto fn = real<pid_t (*)(pid_t, int*, int, struct rusage*)>(g_real_wait4, "wait4");
  int local = 0;
  int* status = wstatus != nullptr ? wstatus : &local;
  const pid_t reaped = fn(pid, status, options, usage);
  ReentryGuard guard;
  if (reaped > 0 && guard.outermost() && vramtrace::preload::is_recording())
    report(reaped, *status);
  return reaped;
}

// glibc's wait3 calls its internal wait4, which the hook above cannot see: shells use it.
extern "C" __attribute__((visibility("default"))) pid_t wait3(int* wstatus, int options,
                                                              struct rusage* usage) {
  return wait4(-1, wstatus, options, usage);
}

extern "C" __attribute__((visibility("default"))) int waitid(idtype_t idtype, id_t id,
                                                             siginfo_t* infop, int options) {
  auto fn = real<int (*)(idtype_t, id_t, siginfo_t*, int)>(g_real_waitid, "waitid");
  const int result = fn(idtype, id, infop, options);
  // WNOWAIT leaves the child waitable: it has not been reaped, and will be reported then.
  if (result != 0 || infop == nullptr || infop->si_pid == 0 || (options & WNOWAIT) != 0)
    return result;
  int status;
  switch (infop->si_code) {
    case CLD_EXITED:
      status = (infop->si_status & 0xff) << 8;
      break;
    case CLD_KILLED:
      status = infop->si_status & 0x7f;
      break;
    case CLD_DUMPED:
      status = (infop->si_status & 0x7f) | 0x80;
      break;
    default:
      return result;
  }
  ReentryGuard guard;
  if (guard.outermost() && vramtrace::preload::is_recording()) report(infop->si_pid, status);
  return result;
}
