// The shim's C API, for programs and the Python package that want to know whether they run
// under vramtrace. Markers and ranges arrive with the NVTX work ([driver]).
#include "recorder.h"

extern "C" __attribute__((visibility("default"))) int vramtrace_is_recording(void) {
  return vramtrace::preload::is_recording() ? 1 : 0;
}
