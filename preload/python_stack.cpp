#include "python_stack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstring>

#include "real_functions.h"
#include "wire_encoder.h"

namespace vramtrace::preload {
namespace {

// The part of CPython's C API the walk uses, as plain function pointers. Objects are void*:
// the shim never looks inside one.
struct PythonApi {
  // Required: every CPython from 3.9 exports these.
  int (*is_initialized)();                          // Py_IsInitialized
  void* (*gilstate_this_thread_state)();            // PyGILState_GetThisThreadState
  int (*gilstate_check)();                          // PyGILState_Check
  void* (*thread_state_get_frame)(void*);           // PyThreadState_GetFrame: new reference
  void* (*frame_get_back)(void*);                   // PyFrame_GetBack: new reference
  void* (*frame_get_code)(void*);                   // PyFrame_GetCode: new reference
  int (*frame_get_line_number)(void*);              // PyFrame_GetLineNumber
  void (*incref)(void*);                            // Py_IncRef
  void (*decref)(void*);                            // Py_DecRef
  void* (*get_attr_string)(void*, const char*);     // PyObject_GetAttrString: new reference
  const char* (*unicode_as_utf8)(void*, ssize_t*);  // PyUnicode_AsUTF8AndSize
  long (*long_as_long)(void*);                      // PyLong_AsLong
  void (*err_fetch)(void**, void**, void**);        // PyErr_Fetch
  void (*err_restore)(void*, void*, void*);         // PyErr_Restore
  void (*err_clear)();                              // PyErr_Clear
  const char* (*get_version)();                     // Py_GetVersion
  // Optional.
  void* (
      *current_thread_state)();  // PyThreadState_GetUnchecked (3.13), _PyThreadState_UncheckedGet
  int (*is_finalizing)();        // Py_IsFinalizing (3.13), _Py_IsFinalizing
  int (*gc_disable)();           // PyGC_Disable (3.10+)
  int (*gc_enable)();            // PyGC_Enable (3.10+)
};

PythonApi g_api;
std::atomic<bool> g_api_ready{false};
std::atomic<uint64_t> g_resolved_at_generation{~0ull};
pthread_mutex_t g_resolve_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<bool> g_interpreter_sent{false};

template <class Fn>
bool resolve(Fn* slot, const char* name) {
  *slot = reinterpret_cast<Fn>(real_dlsym(RTLD_DEFAULT, name));
  return *slot != nullptr;
}

template <class Fn>
void resolve_first(Fn* slot, const char* name, const char* older_name) {
  if (!resolve(slot, name)) resolve(slot, older_name);
}

// Looks for the interpreter in what the loader has now. The Python objects of a process are in
// the global scope (python links or exports them; an embedding program dlopens libpython with
// RTLD_GLOBAL, as extension modules require), so RTLD_DEFAULT finds them.
void resolve_api(uint64_t loader_generation) {
  pthread_mutex_lock(&g_resolve_mutex);
  if (!g_api_ready.load(std::memory_order_relaxed) &&
      g_resolved_at_generation.load(std::memory_order_relaxed) != loader_generation) {
    g_resolved_at_generation.store(loader_generation, std::memory_order_relaxed);
    PythonApi api{};
    const bool found =
        resolve(&api.is_initialized, "Py_IsInitialized") &&
        resolve(&api.gilstate_this_thread_state, "PyGILState_GetThisThreadState") &&
        resolve(&api.gilstate_check, "PyGILState_Check") &&
        resolve(&api.thread_state_get_frame, "PyThreadState_GetFrame") &&
        resolve(&api.frame_get_back, "PyFrame_GetBack") &&
        resolve(&api.frame_get_code, "PyFrame_GetCode") &&
        resolve(&api.frame_get_line_number, "PyFrame_GetLineNumber") &&
        resolve(&api.incref, "Py_IncRef") && resolve(&api.decref, "Py_DecRef") &&
        resolve(&api.get_attr_string, "PyObject_GetAttrString") &&
        resolve(&api.unicode_as_utf8, "PyUnicode_AsUTF8AndSize") &&
        resolve(&api.long_as_long, "PyLong_AsLong") && resolve(&api.err_fetch, "PyErr_Fetch") &&
        resolve(&api.err_restore, "PyErr_Restore") && resolve(&api.err_clear, "PyErr_Clear") &&
        resolve(&api.get_version, "Py_GetVersion");
    if (found) {
      resolve_first(&api.current_thread_state, "PyThreadState_GetUnchecked",
                    "_PyThreadState_UncheckedGet");
      resolve_first(&api.is_finalizing, "Py_IsFinalizing", "_Py_IsFinalizing");
      if (!resolve(&api.gc_disable, "PyGC_Disable") || !resolve(&api.gc_enable, "PyGC_Enable"))
        api.gc_disable = nullptr;
      g_api = api;
      g_api_ready.store(true, std::memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_resolve_mutex);
}

// The code objects already sent, by address: open addressing, no heap. Each holds a reference
// taken when it was sent, so an address here is never another object's.
constexpr uint32_t kCodeSlots = 1u << 15;
constexpr uint32_t kCodeSlotsUsable = kCodeSlots / 4 * 3;
uintptr_t g_code_slots[kCodeSlots];
uint32_t g_code_count = 0;
pthread_mutex_t g_code_mutex = PTHREAD_MUTEX_INITIALIZER;

enum class Interned { kKnown, kNew, kFull };

// Finds `code`, or claims a slot for it. The caller holds g_code_mutex.
Interned intern_code(uintptr_t code) {
  uint32_t i = static_cast<uint32_t>((code >> 4) * 0x9E3779B97F4A7C15ull >> 49) & (kCodeSlots - 1);
  Interned result = Interned::kFull;
  for (;; i = (i + 1) & (kCodeSlots - 1)) {
    if (g_code_slots[i] == code) {
      result = Interned::kKnown;
      break;
    }
    if (g_code_slots[i] == 0) {
      if (g_code_count < kCodeSlotsUsable) {
        g_code_slots[i] = code;
        ++g_code_count;
        result = Interned::kNew;
      }
      break;
    }
  }
  return result;
}

// Copies the str attribute `name` of `object` into `out` (NUL-terminated, cut at the buffer's
// size on a UTF-8 boundary); "" when it is missing or not a str.
void copy_str_attribute(void* object, const char* name, char* out, size_t capacity) {
  out[0] = '\0';
  void* value = g_api.get_attr_string(object, name);
  if (value == nullptr) {
    g_api.err_clear();
    return;
  }
  ssize_t bytes = 0;
  const char* utf8 = g_api.unicode_as_utf8(value, &bytes);
  if (utf8 == nullptr) {
    g_api.err_clear();
  } else {
    size_t n =
        static_cast<size_t>(bytes) < capacity - 1 ? static_cast<size_t>(bytes) : capacity - 1;
    while (n > 0 && n < static_cast<size_t>(bytes) && (utf8[n] & 0xC0) == 0x80) --n;
    std::memcpy(out, utf8, n);
    out[n] = '\0';
  }
  g_api.decref(value);
}

long long_attribute(void* object, const char* name) {
  void* value = g_api.get_attr_string(object, name);
  if (value == nullptr) {
    g_api.err_clear();
    return 0;
  }
  long v = g_api.long_as_long(value);
  if (v == -1) g_api.err_clear();
  g_api.decref(value);
  return v < 0 ? 0 : v;
}

// Sends a PythonCode message for a code object seen for the first time, and keeps it alive.
bool send_code(void* code, PythonMessageSink sink) {
  g_api.incref(code);
  char filename[1024];  // on the stack: TLS in a preloaded library could call malloc
  char name[512];
  copy_str_attribute(code, "co_filename", filename, sizeof filename);
  copy_str_attribute(code, "co_qualname", name, sizeof name);  // 3.11+
  if (name[0] == '\0') copy_str_attribute(code, "co_name", name, sizeof name);
  const long first_line = long_attribute(code, "co_firstlineno");
  uint8_t buf[sizeof filename + sizeof name + 64];
  const size_t bytes = encode_python_code(reinterpret_cast<uintptr_t>(code), filename, name,
                                          static_cast<uint32_t>(first_line), buf, sizeof buf);
  return sink(buf, bytes);
}

bool send_interpreter(PythonMessageSink sink) {
  if (g_interpreter_sent.exchange(true)) return true;
  uint8_t buf[512];
  const size_t bytes =
      encode_python_interpreter(reinterpret_cast<uintptr_t>(g_api.thread_state_get_frame),
                                g_api.get_version(), buf, sizeof buf);
  return sink(buf, bytes);
}

// The walk proper. The caller holds the GIL. Automatic garbage collection is paused: the walk
// allocates (3.11+ makes frame objects on demand), and a collection started by it could run
// finalizers, which could free tensors inside this hook, where the shim would not see them.
// The thread's pending exception, if any, is set aside, so that nothing here can change it.
void walk_frames(void* thread_state, PythonFrames* out, PythonMessageSink sink) {
  const int gc_was_enabled = g_api.gc_disable ? g_api.gc_disable() : 0;
  void *type = nullptr, *value = nullptr, *traceback = nullptr;
  g_api.err_fetch(&type, &value, &traceback);

  bool complete = true;
  // One lock for the whole walk. Only threads that hold a GIL get here, so it is contended
  // only between sub-interpreters with GILs of their own; Python code run under it cannot come
  // back into the walk on this thread (the shim's re-entry guard is set).
  pthread_mutex_lock(&g_code_mutex);
  void* frame = g_api.thread_state_get_frame(thread_state);
  while (frame != nullptr) {
    if (out->depth == kMaxPythonDepth) {
      out->status = PythonStackStatus::kTruncated;
      g_api.decref(frame);
      break;
    }
    void* code = g_api.frame_get_code(frame);
    const int line = g_api.frame_get_line_number(frame);
    const Interned interned = intern_code(reinterpret_cast<uintptr_t>(code));
    if (interned == Interned::kNew && !send_code(code, sink)) complete = false;
    if (interned == Interned::kFull) complete = false;
    out->code[out->depth] = reinterpret_cast<uintptr_t>(code);
    out->line[out->depth] = line > 0 ? static_cast<uint32_t>(line) : 0;
    ++out->depth;
    g_api.decref(code);  // the table's reference (kKnown, kNew) keeps it alive
    void* back = g_api.frame_get_back(frame);
    g_api.decref(frame);
    frame = back;
  }
  pthread_mutex_unlock(&g_code_mutex);

  g_api.err_restore(type, value, traceback);
  if (gc_was_enabled && g_api.gc_enable) g_api.gc_enable();
  if (!complete) {
    out->depth = 0;
    out->status = PythonStackStatus::kUnavailable;
  } else if (out->status != PythonStackStatus::kTruncated) {
    out->status = PythonStackStatus::kCaptured;
  }
}

}  // namespace

void capture_python_stack(PythonFrames* out, uint64_t loader_generation, PythonMessageSink sink) {
  out->depth = 0;
  out->status = PythonStackStatus::kNone;
  if (!g_api_ready.load(std::memory_order_acquire)) {
    if (g_resolved_at_generation.load(std::memory_order_relaxed) == loader_generation) return;
    resolve_api(loader_generation);
    if (!g_api_ready.load(std::memory_order_acquire)) return;
  }
  if (!g_api.is_initialized()) return;
  // The thread's own state, with or without the GIL; null: it never ran Python.
  void* own_state = g_api.gilstate_this_thread_state();
  // The state that holds the GIL on this thread now; null: none does.
  void* attached = nullptr;
  if (g_api.current_thread_state != nullptr) {
    attached = g_api.current_thread_state();
  } else if (own_state != nullptr && g_api.gilstate_check()) {
    attached = own_state;
  }
  if (attached == nullptr) {
    if (own_state != nullptr) out->status = PythonStackStatus::kWithoutGil;
    return;
  }
  if (g_api.is_finalizing != nullptr && g_api.is_finalizing()) {
    out->status = PythonStackStatus::kUnavailable;
    return;
  }
  if (!send_interpreter(sink)) return;
  walk_frames(attached, out, sink);
}

void forget_sent_python_code() {
  // Another thread may have held these at fork; the child has only the forking thread.
  g_code_mutex = PTHREAD_MUTEX_INITIALIZER;
  g_resolve_mutex = PTHREAD_MUTEX_INITIALIZER;
  std::memset(g_code_slots, 0, sizeof g_code_slots);
  g_code_count = 0;
  g_interpreter_sent.store(false);
}

}  // namespace vramtrace::preload
