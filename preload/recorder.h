// The record path inside the target process: capture the stack, encode, put on the ring.
// Also the shim's life cycle: start-up, fork, exit, and stopping when the collector is gone.
//
// Rules (docs/architecture.md, "Rules for code inside someone else's process"): nothing here
// throws, aborts or blocks for ever; the stack is captured before any lock is taken; on any
// internal failure recording stops, one line goes to stderr, and the program runs on.
#pragma once

#include <atomic>
#include <cstdint>

#include "live_reply.h"
#include "wire_encoder.h"

namespace vramtrace::preload {

enum class ShimState : int {
  kOff = 0,        // no collector asked for (VRAMTRACE_SOCKET unset): pure pass-through
  kRecording = 1,  // events go to the ring
  kStopped = 2,    // recording ended (collector gone, internal error); pass-through
};

extern std::atomic<int> g_shim_state;
extern std::atomic<bool> g_started;

// Which library this copy of the record path serves (vramtrace_wire_Backend), as its
// ProcessStart says: the shim by default; the CUPTI library sets its own before starting.
void set_backend(int backend);

// Stacks leave out the frames of the object holding `address` where they come first, as they
// leave out the record path's own (Unwinder::skip_innermost_object). Call after shim_start().
bool skip_innermost_frames_of(const void* address);

// Starts recording if VRAMTRACE_SOCKET names a collector. Idempotent. The shim's constructor
// (start_at_load.cpp) calls it, but another library's constructor may call CUDA (or dlsym) before
// the loader runs ours, so every hook makes sure first.
void shim_start();

inline void ensure_started() {
  if (__builtin_expect(!g_started.load(std::memory_order_relaxed), 0)) shim_start();
}

inline bool is_recording() {
  ensure_started();
  return g_shim_state.load(std::memory_order_relaxed) == static_cast<int>(ShimState::kRecording);
}

// A hint on the way into a hooked call, while recording: brings the ring's next lines into
// this core's cache for writing, so that they arrive while the real call runs rather than
// when the record is published.
void prepare_to_record();

// Records an allocation call that has returned. `e.tid` is filled in here. The hooks pass their
// own event, not a copy: a copy's wide loads of the fields just stored wait for the stores to
// leave the store buffer (bench/shim_record_bench.cpp: 124 -> 114 ns an event).
void record_alloc(AllocEvent& e);

// Records a free that is about to reach the real free function. Returns the record's
// sequence number (0 if nothing was recorded), for record_free_failed.
uint64_t record_free(FreeEvent& e);

// The free recorded as `free_seq` failed with `result`: the memory is still allocated.
void record_free_failed(uint64_t free_seq, int32_t result);

// Frees made inside another hook on the same thread: a signal handler's that interrupted it, or
// the library's own work (hook_support.h). Recorded without a stack and marked `nested`, so that
// the collector takes one whose address is not live for the library's bookkeeping rather than a
// bad free. Safe in a signal handler, provided the thread is not inside write_record
// (inside_ring_write()). Return and arguments as record_free and record_free_failed.
uint64_t record_nested_free(FreeEvent e);
void record_nested_free_failed(uint64_t free_seq, int32_t result);

// Whether this thread is inside write_record now (waiting for or holding the ring's lock): a
// signal handler that interrupted it must not write, or it would wait on a lock held beneath it.
bool inside_ring_write();

// Where write_record finds the frees a signal handler could not record while its thread was
// inside write_record (deferred_frees.h): `pop` hands them out one at a time, oldest first, and
// returns false when none is left. Each write_record writes them when its own write ends, before
// it returns. Async-signal-safe.
void set_deferred_free_source(bool (*pop)(FreeEvent* out));

// An event the shim saw and could not record (an allocation in a signal handler that interrupted
// a hook, a deferred free with no room): counted, and said to the collector as the data-loss
// notice "calls_unrecorded" at the next record and at exit. Async-signal-safe.
void count_unrecorded_call();

// For records that carry no stack (markers): the calling thread's id, and the record path's
// last step. write_record puts one encoded message on the ring and returns its sequence
// number, or 0 (on failure recording stops). Call only inside an outermost ReentryGuard.
uint32_t current_tid();
uint64_t write_record(const uint8_t* payload, size_t bytes);

// The collector's answer to live query `query_id` (collector_link.h, read_live_reply). False
// when not recording, or as read_live_reply. Callers serialise.
bool read_live_reply(uint64_t query_id, int timeout_ms, wire::LiveReplyHeader* header, char* report,
                     size_t capacity);

// The caller's current device per the real runtime, or -1. Call only inside a ReentryGuard.
int32_t current_device();

// For benchmarks and tests of the record path: takes the ring and stack capture as they are
// set up by shim_start() or by attach_ring_for_testing().
bool attach_ring_for_testing(void* mapping, uint64_t capacity);

}  // namespace vramtrace::preload
