// The shim's C API (include/vramtrace/vramtrace.h): whether the process is recorded, and
// markers and ranges from the program itself (source API). NVTX's arrive through
// nvtx_callbacks.cpp instead.
#include "vramtrace/vramtrace.h"

#include "marker_recorder.h"
#include "marker_text.h"
#include "nanopb/vramtrace.pb.h"
#include "range_nesting.h"
#include "recorder.h"

namespace {

using vramtrace::preload::is_recording;

// The name is only copied (bounded, made valid UTF-8) when the marker will be recorded.
void record_api_marker(int type, const char* name) {
  vramtrace::preload::MarkerText text;
  text.assign(name);
  vramtrace::preload::MarkerEvent e{};
  e.type = type;
  e.source = vramtrace_wire_Marker_Source_SOURCE_API;
  e.name = text.c_str();
  vramtrace::preload::record_marker(e);
}

}  // namespace

extern "C" {

int vramtrace_is_recording(void) {
  return is_recording() ? 1 : 0;
}

void vramtrace_mark(const char* name) {
  if (is_recording()) record_api_marker(vramtrace_wire_Marker_Type_TYPE_MARK, name);
}

int vramtrace_range_push(const char* name) {
  const int level = vramtrace::preload::enter_range(vramtrace::preload::kApiScope);
  if (level >= 0 && is_recording())
    record_api_marker(vramtrace_wire_Marker_Type_TYPE_RANGE_PUSH, name);
  return level;
}

int vramtrace_range_pop(void) {
  const int level = vramtrace::preload::leave_range(vramtrace::preload::kApiScope);
  if (level >= 0 && is_recording())
    record_api_marker(vramtrace_wire_Marker_Type_TYPE_RANGE_POP, nullptr);
  return level;
}

}  // extern "C"
