#include "activity_buffers.h"

#include <stdlib.h>

#include "activity_translation.h"
#include "nanopb/vramtrace.pb.h"
#include "recorder.h"
#include "reentry_guard.h"

namespace vramtrace::cupti {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
constexpr size_t kBufferAlignment = 8;  // ACTIVITY_RECORD_ALIGNMENT in CUPTI's samples

const CuptiLibrary* g_cupti = nullptr;  // set once, before the callbacks are registered
uint32_t g_cupti_version = 0;

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void record_activity(const preload::MemoryActivityEvent& e) {
  uint8_t buf[preload::kMaxEventBytes];
  preload::write_record(buf, preload::encode_memory_activity(e, buf, sizeof buf));
}

void say_dropped(CUcontext context, uint32_t stream_id) {
  size_t dropped = 0;
  if (g_cupti->activity_get_num_dropped_records(context, stream_id, &dropped) != CUPTI_SUCCESS ||
      dropped == 0)
    return;
  uint8_t buf[512];
  preload::write_record(
      buf, preload::encode_notice(
               vramtrace_wire_Notice_Severity_SEVERITY_DATA_LOSS, "cupti_activity_dropped",
               "CUPTI dropped activity records: its buffers were full", buf, sizeof buf));
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                                  size_t valid_bytes) {
  preload::ReentryGuard guard;
  if (guard.outermost() && preload::is_recording()) {
    CUpti_Activity* record = nullptr;
    while (g_cupti->activity_get_next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS)
      if (auto event = translate_activity(*record, g_cupti_version)) record_activity(*event);
    say_dropped(context, stream_id);
  }
  free(buffer);
}

}  // namespace

CUptiResult enable_memory_activity(const CuptiLibrary& cupti) {
  g_cupti = &cupti;
  if (cupti.get_version(&g_cupti_version) != CUPTI_SUCCESS) g_cupti_version = 0;
  CUptiResult result =
      cupti.activity_register_callbacks(&on_buffer_requested, &on_buffer_completed);
  if (result != CUPTI_SUCCESS) return result;
  if ((result = cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY2)) != CUPTI_SUCCESS) return result;
  return cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
}

void flush_memory_activity() {
  if (g_cupti != nullptr) g_cupti->activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

}  // namespace vramtrace::cupti
