#include "marker_recorder.h"

#include "marker_text.h"
#include "nanopb/vramtrace.pb.h"
#include "recorder.h"
#include "reentry_guard.h"

namespace vramtrace::preload {
namespace {
// Room for the fixed fields and two MarkerTexts (domain and name) with their tags.
constexpr size_t kMaxMarkerBytes = 2 * MarkerText::kCapacity + 64;
}  // namespace

void record_marker(MarkerEvent e) {
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording()) return;
  e.tid = current_tid();
  uint8_t buf[kMaxMarkerBytes];
  write_record(buf, encode_marker(e, buf, sizeof buf));
}

void record_data_loss(const char* name, const char* text) {
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording()) return;
  uint8_t buf[1024];
  write_record(buf, encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_DATA_LOSS, name, text,
                                  buf, sizeof buf));
}

}  // namespace vramtrace::preload
