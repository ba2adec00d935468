// Encodes the shim's events as vramtrace.wire.Envelope messages with nanopb, into a buffer
// the caller owns (on its stack): no heap, no locks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "module_map.h"
#include "python_stack.h"

namespace vramtrace::preload {

inline constexpr int kMaxStackDepth = 256;  // the wire's limit (vramtrace.options)
inline constexpr size_t kMaxEventBytes = 4096;

struct AllocEvent {
  uint32_t tid;
  int32_t device;
  uint64_t stream;
  int kind;  // vramtrace_wire_Kind
  int api;   // vramtrace_wire_Api
  uint64_t address;
  uint64_t size;
  uint64_t requested_size;
  int32_t result;
  uint64_t pool;
  uint32_t flags;
  uint64_t vmm_handle;  // KIND_VMM_MAPPING: the handle mapped
  uint64_t vmm_offset;  // KIND_VMM_MAPPING: the offset into it
  // KIND_BLOCK: the caching allocator's totals; encoded (even when 0) only when has_* is set.
  bool has_allocator_totals;
  uint64_t allocator_allocated;
  uint64_t allocator_reserved;
  uint32_t correlation_id;  // the CUPTI backend's: CUPTI's id of the API call; 0 from the shim
  // A failure for lack of memory: the device's free and total bytes after it; encoded only when
  // has_device_memory is set.
  bool has_device_memory;
  uint64_t device_free;
  uint64_t device_total;
};

struct FreeEvent {
  uint32_t tid;
  int32_t device;  // negative: not known, and not sent
  uint64_t stream;
  int api;
  uint64_t address;
  uint64_t size;              // cuMemUnmap: the range's length; a block's size; 0 otherwise
  bool has_allocator_totals;  // a block's free: the allocator's totals after it
  uint64_t allocator_allocated;
  uint64_t allocator_reserved;
  uint32_t correlation_id;  // as in AllocEvent
  bool nested;              // made inside another hook on the thread (recorder.h)
};

struct Stack {
  const uintptr_t* ips;
  int depth;
  bool truncated;
  const PythonFrames* python = nullptr;  // null: no Python frames to send
  // Stack names (stack_names.h): `name` non-zero sends the frames under that name; `same_as`
  // non-zero sends that name and none of the frames (truncation and the Python status still go).
  uint32_t name = 0;
  uint32_t same_as = 0;
};

struct ProcessStartInfo {
  uint32_t pid, ppid, uid;
  uint64_t start_realtime_ns;
  const char* exe;
  const char* argv;  // NUL-separated, as /proc/self/cmdline
  size_t argv_bytes;
  const char* hostname;
  const char* unwinder;
  // From the launcher's environment; has_* false when no variable gave it.
  bool has_rank, has_local_rank, has_world_size;
  int32_t rank, local_rank, world_size;
  int backend;    // vramtrace_wire_Backend: the library writing the ring
  bool argv_cut;  // arguments after `argv` were left out (it holds those that fit, whole)
};

// A MemoryActivity (a CUPTI activity record, translated by cupti/). `source` is a
// NUL-terminated string or null.
struct MemoryActivityEvent {
  int operation;  // vramtrace_wire_MemoryActivity_Operation
  int kind;       // vramtrace_wire_Kind
  uint32_t correlation_id;
  uint64_t address;
  uint64_t size;
  int32_t device;
  uint32_t stream;
  uint64_t timestamp_ns;
  uint64_t pool_address;
  uint64_t release_threshold;
  uint64_t utilized_size;
  uint64_t min_bytes_to_keep;
  const char* source;
};

// A Marker (NVTX or the C API). The strings are NUL-terminated valid UTF-8 (marker_text.h
// makes them so); null is the empty string.
struct MarkerEvent {
  uint32_t tid;
  int type;    // vramtrace_wire_Marker_Type
  int source;  // vramtrace_wire_Marker_Source
  const char* domain;
  const char* name;
  uint64_t range_id;
  uint32_t color;  // ARGB
  uint32_t category;
};

// Each returns the encoded size, or 0 when the message did not fit in `capacity`.
size_t encode_alloc(const AllocEvent&, const Stack&, uint8_t* out, size_t capacity);
size_t encode_free(const FreeEvent&, const Stack&, uint8_t* out, size_t capacity);
// `stack`: the failed call's, when its Free went without one; Stack{} sends none.
size_t encode_free_failed(uint64_t free_seq, int32_t result, const Stack& stack, uint8_t* out,
                          size_t capacity);
size_t encode_module(const ModuleInfo&, uint8_t* out, size_t capacity);
size_t encode_process_start(const ProcessStartInfo&, uint8_t* out, size_t capacity);
size_t encode_process_exit(int32_t exit_status, uint8_t* out, size_t capacity);
size_t encode_child_exit(uint32_t pid, int32_t wait_status, uint8_t* out, size_t capacity);
// `count`: how many times it happened, for a notice the shim counts (0: once).
size_t encode_notice(int severity, const char* name, const char* text, uint8_t* out,
                     size_t capacity, uint64_t count = 0);
size_t encode_marker(const MarkerEvent&, uint8_t* out, size_t capacity);
size_t encode_memory_activity(const MemoryActivityEvent&, uint8_t* out, size_t capacity);
// A PythonCode message; strings NUL-terminated UTF-8.
size_t encode_python_code(uint64_t id, const char* filename, const char* name, uint32_t first_line,
                          uint8_t* out, size_t capacity);
size_t encode_python_interpreter(uint64_t api_address, const char* version, uint8_t* out,
                                 size_t capacity);
size_t encode_live_checkpoint(uint8_t* out, size_t capacity);
size_t encode_thread_name(uint32_t tid, const char* name, uint8_t* out, size_t capacity);
size_t encode_live_query(uint64_t query_id, uint64_t checkpoint_seq, uint8_t* out, size_t capacity);

}  // namespace vramtrace::preload
