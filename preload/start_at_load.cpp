// The shim starts recording as soon as it is loaded, so that a process that allocates nothing
// still appears in the trace with its command line. Apart from the record path (recorder.cpp)
// because other users of that path start it themselves: the CUPTI library only once CUDA has
// called its InitializeInjection and it knows it is the CUPTI backend.
#include "recorder.h"

namespace vramtrace::preload {
namespace {
__attribute__((constructor)) void start_at_load() {
  shim_start();
}
}  // namespace
}  // namespace vramtrace::preload
