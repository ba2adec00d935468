// The frees a signal handler makes while its thread is inside write_record (hook_support.h): the
// ring's lock may be held beneath the handler, so they cannot be written there. Each thread keeps
// them in a small fixed queue of its own (no allocation, no lock), which write_record empties
// when its write ends (recorder.h, set_deferred_free_source).
//
// Order: such a free reaches the ring right after the record being written when the handler
// came, before that thread returns to its hook. That record was made before the handler ran, so
// even an allocation at the same address precedes its free on the ring, as it did in the
// program; and no later event of this thread can come first. Another thread could reuse the
// address only in the moment between this thread's write and the free's, after the real free.
//
// Producers are signal handlers on this thread, which may interrupt each other (a slot is taken
// by compare-and-swap); the consumer is one write_record at a time on this thread (recorder.cpp
// keeps a handler from consuming while the code beneath it does), which producers interrupt but
// which never interrupts one: each handler ends before the code it interrupted resumes. A free
// deferred by a handler that interrupted another handler's own write waits, at the latest, for
// the thread's next record.
#include <atomic>
#include <cstdint>

#include "hook_support.h"

namespace vramtrace::preload {
namespace {

// A handler that frees more than this during one write (a full ring: the write waits for the
// collector) loses the rest, counted.
constexpr uint32_t kSlots = 16;

struct Slot {
  FreeEvent event{};
  std::atomic<bool> ready{false};
};

// Only in the shim, which LD_PRELOAD loads at start-up: its TLS is in the static block.
constinit thread_local Slot t_slots[kSlots] __attribute__((tls_model("initial-exec")));
constinit thread_local std::atomic<uint32_t> t_head __attribute__((tls_model("initial-exec"))){0};
constinit thread_local std::atomic<uint32_t> t_tail __attribute__((tls_model("initial-exec"))){0};

bool pop_deferred_free(FreeEvent* out) {
  const uint32_t head = t_head.load(std::memory_order_relaxed);
  if (head == t_tail.load(std::memory_order_relaxed)) return false;
  Slot& slot = t_slots[head % kSlots];
  // Every push this thread began has ended before the code outside the handlers runs.
  if (!slot.ready.load(std::memory_order_relaxed)) return false;
  std::atomic_signal_fence(std::memory_order_acquire);
  *out = slot.event;
  slot.ready.store(false, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_release);
  t_head.store(head + 1, std::memory_order_relaxed);
  return true;
}

}  // namespace

void defer_free(const FreeEvent& e) {
  set_deferred_free_source(&pop_deferred_free);
  uint32_t tail = t_tail.load(std::memory_order_relaxed);
  do {
    if (tail - t_head.load(std::memory_order_relaxed) >= kSlots) {
      count_unrecorded_call();
      return;
    }
  } while (!t_tail.compare_exchange_weak(tail, tail + 1, std::memory_order_relaxed));
  Slot& slot = t_slots[tail % kSlots];
  slot.event = e;
  std::atomic_signal_fence(std::memory_order_release);
  slot.ready.store(true, std::memory_order_relaxed);
}

}  // namespace vramtrace::preload
