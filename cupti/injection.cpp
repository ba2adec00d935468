// The CUPTI backend's entry point. CUDA loads the library that CUDA_INJECTION64_PATH names when
// the process initialises the driver, and calls its InitializeInjection once; `vramtrace run
// --backend cupti|both` sets that variable.
//
// Nothing here may fail the host: when CUPTI cannot be had (no libcupti, an old driver, another
// subscriber such as torch.profiler or Nsight Systems, which CUPTI before 13.3 does not allow
// beside us) it says so in one line and returns; the shim, if loaded, records alone.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>

#include "activity_buffers.h"
#include "api_callbacks.h"
#include "cupti_library.h"
#include "nanopb/vramtrace.pb.h"
#include "recorder.h"
#include "reentry_guard.h"
#include "shim_log.h"

namespace vramtrace::cupti {
namespace {

CuptiLibrary g_cupti;
std::atomic<bool> g_initialized{false};

// What happens to the recording without us: the shim's hooks still record when it is loaded.
const char* without_us() {
  const char* preload = getenv("LD_PRELOAD");
  const bool shim = preload != nullptr && std::strstr(preload, "libvramtrace_preload") != nullptr;
  return shim ? "; the LD_PRELOAD shim records alone" : "; nothing is recorded by CUPTI";
}

void on_process_exit(int, void*) {
  flush_memory_activity();
}

// Says once on stderr why CUPTI records nothing, and, once our ring is up, in the trace too
// (the stat shim_cupti_unavailable, which `summary` shows).
void refuse(const char* why, const char* detail = "") {
  char reason[200];
  snprintf(reason, sizeof reason, "%s%s", why, detail);
  preload::shim_log("CUPTI backend unavailable: ", reason, without_us());
  if (!preload::is_recording()) return;
  char text[256];
  snprintf(text, sizeof text, "the CUPTI backend recorded nothing: %s", reason);
  uint8_t buf[512];
  preload::write_record(buf, preload::encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_ERROR,
                                                    "cupti_unavailable", text, buf, sizeof buf));
}

// A callback runs under CUDA's frames (libcupti's dispatch, the driver's, and for a runtime call
// the dynamic runtime's own), where the shim's hooks run right under the program's call: leave
// them out of the stacks, so that a stack starts where the program called CUDA. A static
// runtime's frames are in the program itself and stay.
void skip_cuda_frames() {
  preload::skip_innermost_frames_of(reinterpret_cast<const void*>(g_cupti.subscribe));
  struct Library {
    const char* soname;
    const char* function;  // any function of the library's: its address names the object
  };
  for (const Library& l :
       {Library{"libcuda.so.1", "cuInit"}, Library{"libcudart.so.13", "cudaGetDevice"},
        Library{"libcudart.so.12", "cudaGetDevice"}}) {
    void* library = dlopen(l.soname, RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) continue;
    if (void* function = dlsym(library, l.function)) preload::skip_innermost_frames_of(function);
    dlclose(library);
  }
}

void start() {
  const char* socket = getenv("VRAMTRACE_SOCKET");
  if (socket == nullptr || *socket == '\0') return;  // loaded outside `vramtrace run`: stay idle
  const char* why = nullptr;
  if (!g_cupti.load(&why)) return refuse(why);
  // Our own ring, with our own ProcessStart: the collector tells the backends apart by it.
  preload::set_backend(vramtrace_wire_Backend_BACKEND_CUPTI);
  preload::shim_start();
  if (!preload::is_recording()) return;  // the record path said why already
  skip_cuda_frames();

  const CUptiResult subscribed = subscribe_api_callbacks(g_cupti);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return refuse("another tool (torch.profiler, Nsight...) holds CUPTI's only subscription");
  if (subscribed != CUPTI_SUCCESS)
    return refuse("CUPTI refused the API callbacks: ", g_cupti.describe(subscribed));
  const CUptiResult activity = enable_memory_activity(g_cupti);
  if (activity != CUPTI_SUCCESS) {
    preload::shim_log("CUPTI backend: no memory activity records (", g_cupti.describe(activity),
                      "); API callbacks only");
    return;
  }
  // Registered after the record path's own exit handler, so it runs before it: the last
  // records reach the ring before the process says goodbye.
  on_exit(&on_process_exit, nullptr);
}

}  // namespace
}  // namespace vramtrace::cupti

// CUDA's injection entry point: returns 1 (success) whatever happened, since a 0 would make
// CUDA report an error to a program that did nothing wrong.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (vramtrace::cupti::g_initialized.exchange(true)) return 1;
  vramtrace::preload::ReentryGuard guard;
  vramtrace::cupti::start();
  return 1;
}
