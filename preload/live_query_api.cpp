// The C API's live queries (include/vramtrace/vramtrace.h): a checkpoint record, then a query
// record naming it, whose answer the collector sends back on the socket
// (collector/live_query.h, proto/live_reply.h).
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "live_reply.h"
#include "record_clock.h"
#include "recorder.h"
#include "reentry_guard.h"
#include "vramtrace/vramtrace.h"
#include "wire_encoder.h"

namespace {

using vramtrace::preload::is_recording;
using vramtrace::preload::ReentryGuard;

// One reader of the socket at a time: answers come back in the order the queries were read,
// and each caller must read its own.
pthread_mutex_t g_reply_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint64_t> g_next_query_id{1};

// Writes a record outside any hook; 0 when it could not be written.
template <class Encode>
uint64_t write_outside_hooks(Encode encode) {
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording()) return 0;
  uint8_t buf[64];
  return vramtrace::preload::write_record(buf, encode(buf, sizeof buf));
}

}  // namespace

extern "C" {

unsigned long long vramtrace_checkpoint(void) {
  if (!is_recording()) return 0;
  return write_outside_hooks([](uint8_t* buf, size_t capacity) {
    return vramtrace::preload::encode_live_checkpoint(buf, capacity);
  });
}

long vramtrace_live_since(unsigned long long checkpoint, vramtrace_live_summary* summary,
                          char* report, unsigned long report_size, int timeout_ms) {
  if (summary != nullptr) *summary = vramtrace_live_summary{};
  if (report != nullptr && report_size > 0) report[0] = '\0';
  if (checkpoint == 0 || !is_recording()) return -1;
  const uint64_t query_id = g_next_query_id.fetch_add(1, std::memory_order_relaxed);
  pthread_mutex_lock(&g_reply_lock);
  const uint64_t sent = write_outside_hooks([&](uint8_t* buf, size_t capacity) {
    return vramtrace::preload::encode_live_query(query_id, checkpoint, buf, capacity);
  });
  vramtrace::wire::LiveReplyHeader header{};
  const size_t capacity = report != nullptr && report_size > 0 ? report_size - 1 : 0;
  const int64_t asked_ns = vramtrace::ring::monotonic_ns();
  const bool answered = sent != 0 && vramtrace::preload::read_live_reply(query_id, timeout_ms,
                                                                         &header, report, capacity);
  const int64_t waited_ms = (vramtrace::ring::monotonic_ns() - asked_ns) / 1'000'000;
  pthread_mutex_unlock(&g_reply_lock);
  if (sent == 0) return -1;
  // The wait ends early only on a hang-up: the collector is gone, and no wait would help.
  if (!answered) return waited_ms < timeout_ms ? -4 : -2;
  if (header.status == vramtrace::wire::kLiveReplyUnknownCheckpoint) return -3;
  if (report != nullptr && report_size > 0)
    report[header.report_bytes < capacity ? header.report_bytes : capacity] = '\0';
  if (summary != nullptr) {
    summary->live_bytes = header.live_bytes;
    summary->live_count = header.live_count;
    summary->peak_bytes = header.peak_bytes;
    summary->block_level = header.block_level != 0 ? 1 : 0;
  }
  return static_cast<long>(header.report_bytes);
}

}  // extern "C"
