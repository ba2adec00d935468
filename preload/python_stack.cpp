#include "python_stack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "nanopb/vramtrace.pb.h"
#include "python_layout.h"
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
  // PyThreadState_GetUnchecked (3.13), _PyThreadState_UncheckedGet before.
  void* (*current_thread_state)();
  // Whether current_thread_state() is the calling thread's state (3.12+, a thread-local) rather
  // than the state that holds the GIL, whichever thread's it is (3.9 to 3.11, a global).
  bool current_is_per_thread;
  int (*is_finalizing)();         // Py_IsFinalizing (3.13), _Py_IsFinalizing
  int (*gc_disable)();            // PyGC_Disable (3.10+)
  int (*gc_enable)();             // PyGC_Enable (3.10+)
  int (*frame_get_lasti)(void*);  // PyFrame_GetLasti (3.11+): the line cache's key
  // For threads without the GIL (python_layout.h): the layout, the types that prove a pointer
  // is what it should be, and the line functions that only read.
  const PythonLayout* layout;
  uintptr_t code_type;                       // &PyCode_Type
  uintptr_t unicode_type;                    // &PyUnicode_Type
  uintptr_t frame_type;                      // &PyFrame_Type (3.9, 3.10)
  int (*code_addr2line)(void*, int);         // PyCode_Addr2Line
  int (*interpreter_frame_get_line)(void*);  // PyUnstable_InterpreterFrame_GetLine (3.12+)
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

// The interpreter's minor version, from "3.11.7 (main, ...) [GCC ...]"; -1 when not a 3.x.
long python_minor(const PythonApi& api) {
  const char* version = api.get_version();
  if (version == nullptr || version[0] != '3' || version[1] != '.') return -1;
  char* end = nullptr;
  const long minor = strtol(version + 2, &end, 10);
  if (end == version + 2 || *end != '.') return -1;
  return minor;
}

// The layout for reading frames without the GIL, when this interpreter has a known one and the
// user did not turn the reading off (VRAMTRACE_PYTHON_WITHOUT_GIL=0).
void resolve_layout(PythonApi* api) {
  const char* setting = getenv("VRAMTRACE_PYTHON_WITHOUT_GIL");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return;
  // A free-threaded build's objects have another header.
  const char* version = api->get_version();
  if (version == nullptr || std::strstr(version, "free-threading") != nullptr) return;
  const long minor = python_minor(*api);
  if (minor < 0) return;
  const PythonLayout* layout = python_layout_for(static_cast<int>(minor));
  if (layout == nullptr) return;
  // For tests of the run-time check only: the frames' code pointer read N bytes off, a wrong
  // layout that the first walk must reject without faulting.
  if (const char* skew = getenv("VRAMTRACE_TEST_PYTHON_LAYOUT_SKEW")) {
    static PythonLayout skewed;
    skewed = *layout;
    skewed.frame_code += atoi(skew);
    layout = &skewed;
  }
  void* code_type = real_dlsym(RTLD_DEFAULT, "PyCode_Type");
  void* unicode_type = real_dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  if (code_type == nullptr || unicode_type == nullptr) return;
  if (layout->frame_objects) {
    void* frame_type = real_dlsym(RTLD_DEFAULT, "PyFrame_Type");
    if (frame_type == nullptr) return;
    api->frame_type = reinterpret_cast<uintptr_t>(frame_type);
  } else if (layout->frame_instruction >= 0) {
    if (!resolve(&api->code_addr2line, "PyCode_Addr2Line")) return;
  } else if (!resolve(&api->interpreter_frame_get_line, "PyUnstable_InterpreterFrame_GetLine")) {
    return;
  }
  api->code_type = reinterpret_cast<uintptr_t>(code_type);
  api->unicode_type = reinterpret_cast<uintptr_t>(unicode_type);
  api->layout = layout;
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
      api.current_is_per_thread = python_minor(api) >= 12;
      resolve_first(&api.is_finalizing, "Py_IsFinalizing", "_Py_IsFinalizing");
      if (!resolve(&api.gc_disable, "PyGC_Disable") || !resolve(&api.gc_enable, "PyGC_Enable"))
        api.gc_disable = nullptr;
      resolve(&api.frame_get_lasti, "PyFrame_GetLasti");
      resolve_layout(&api);
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

// Lines by (code, instruction offset), since decoding a code object's line table is most of
// what a walk costs: 3.11's PyCode_Addr2Line reads the table from its start every time (a
// third of a traced Python program's time, under perf, before this cache). Only for code the
// walk can name for sure: kept alive by the code table (the walk with the GIL), or known by
// its id (without it: the address mixed with its name strings', as the trace names it).
// Direct-mapped, no heap; the caller holds g_code_mutex.
struct LineSlot {
  uint64_t code;  // 0: empty
  int32_t offset;
  int32_t line;
};
constexpr uint32_t kLineSlotBits = 13;
LineSlot g_line_slots[1u << kLineSlotBits];

template <class Decode>
int cached_line(uint64_t code, int32_t offset, Decode&& decode) {
  const uint64_t h =
      (code ^ static_cast<uint64_t>(static_cast<uint32_t>(offset)) * 0x9E3779B97F4A7C15ull) *
      0xBF58476D1CE4E5B9ull;
  LineSlot& slot = g_line_slots[h >> (64 - kLineSlotBits)];
  if (slot.code == code && slot.offset == offset) return slot.line;
  const int line = decode();
  slot = {code, offset, line};
  return line;
}

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
    const Interned interned = intern_code(reinterpret_cast<uintptr_t>(code));
    if (interned == Interned::kNew && !send_code(code, sink)) complete = false;
    if (interned == Interned::kFull) complete = false;
    const int lasti = interned != Interned::kFull && g_api.frame_get_lasti != nullptr
                          ? g_api.frame_get_lasti(frame)
                          : -1;
    const int line = lasti < 0 ? g_api.frame_get_line_number(frame)
                               : cached_line(reinterpret_cast<uintptr_t>(code), lasti, [frame] {
                                   return g_api.frame_get_line_number(frame);
                                 });
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

// Reads this process's memory: directly, or, while a layout is on trial, through
// process_vm_readv, which reports an address that is not mapped instead of faulting.
class MemoryReader {
 public:
  explicit MemoryReader(bool checked) : checked_(checked) {}

  bool read(uintptr_t address, void* out, size_t bytes) const {
    if (address < 4096) return false;
    if (!checked_) {
      std::memcpy(out, reinterpret_cast<const void*>(address), bytes);
      return true;
    }
    iovec local{out, bytes};
    iovec remote{reinterpret_cast<void*>(address), bytes};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
  }
  template <class T>
  bool field(uintptr_t object, int offset, T* out) const {
    return offset >= 0 && read(object + static_cast<uintptr_t>(offset), out, sizeof(T));
  }
  // True when `object` is an object of `type` (its ob_type, at offset 8 in release builds).
  bool is_a(uintptr_t object, uintptr_t type) const {
    uintptr_t object_type = 0;
    return (object & 7) == 0 && field(object, 8, &object_type) && object_type == type;
  }

 private:
  bool checked_;
};

// Appends `code_point` as UTF-8; false when it does not fit before `end`.
bool put_utf8(uint32_t code_point, char** at, const char* end) {
  char bytes[4];
  int n = 0;
  if (code_point < 0x80) {
    bytes[n++] = static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    bytes[n++] = static_cast<char>(0xC0 | (code_point >> 6));
    bytes[n++] = static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    bytes[n++] = static_cast<char>(0xE0 | (code_point >> 12));
    bytes[n++] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    bytes[n++] = static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    bytes[n++] = static_cast<char>(0xF0 | (code_point >> 18));
    bytes[n++] = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    bytes[n++] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    bytes[n++] = static_cast<char>(0x80 | (code_point & 0x3F));
  }
  if (end - *at < n) return false;
  std::memcpy(*at, bytes, static_cast<size_t>(n));
  *at += n;
  return true;
}

// Copies a str object's text into `out` as UTF-8 (cut at the buffer's size, NUL-terminated),
// from its characters, never from the UTF-8 cache another thread may be filling in. Only compact
// strings, which are what code objects hold, are read; false for anything else.
bool read_str(const MemoryReader& mem, const PythonLayout& layout, uintptr_t object, char* out,
              size_t capacity) {
  out[0] = '\0';
  int64_t length = 0;
  uint32_t state = 0;
  if (!mem.is_a(object, g_api.unicode_type) || !mem.field(object, 16, &length) ||
      !mem.field(object, 32, &state) || length < 0)
    return false;
  const uint32_t kind = (state >> 2) & 7;  // 1, 2 or 4 bytes a character
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return false;
  const uintptr_t data =
      object + static_cast<uintptr_t>(ascii ? layout.ascii_data : layout.compact_data);
  char* at = out;
  const char* end = out + capacity - 1;
  uint8_t chunk[256];
  const size_t per_chunk = sizeof chunk / kind;
  for (int64_t done = 0; done < length;) {
    const size_t left = static_cast<size_t>(length - done);
    const size_t n = left < per_chunk ? left : per_chunk;
    if (!mem.read(data + static_cast<uintptr_t>(done) * kind, chunk, n * kind)) return false;
    for (size_t i = 0; i < n; ++i) {
      uint32_t c = chunk[i];
      if (kind == 2) c = static_cast<uint32_t>(chunk[2 * i] | chunk[2 * i + 1] << 8);
      if (kind == 4)
        c = static_cast<uint32_t>(chunk[4 * i] | chunk[4 * i + 1] << 8 | chunk[4 * i + 2] << 16 |
                                  chunk[4 * i + 3] << 24);
      if (!put_utf8(c, &at, end)) {
        *at = '\0';
        return true;
      }
    }
    done += static_cast<int64_t>(n);
  }
  *at = '\0';
  return true;
}

// A code object met without the GIL cannot be kept alive, so its id says what it is, not only
// where: its address mixed with those of its file and name strings, and the top bit set (no
// user-space address has it) so that it never equals an id of the GIL path. An address reused
// by the code of another function gets another id.
uint64_t unreferenced_code_id(uintptr_t code, uintptr_t filename, uintptr_t qualname) {
  uint64_t h = code * 0x9E3779B97F4A7C15ull;
  h ^= (filename + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
  h ^= (qualname + 0x8CB92BA72F3D8DD7ull) * 0x94D049BB133111EBull;
  return (h >> 1) | (1ull << 63);
}

enum class LayoutTrial : int { kUntried, kTrusted, kRejected };
std::atomic<int> g_layout_trial{static_cast<int>(LayoutTrial::kUntried)};

bool send_layout_rejected(PythonMessageSink sink) {
  uint8_t buf[512];
  const size_t bytes =
      encode_notice(vramtrace_wire_Notice_Severity_SEVERITY_INFO, "python_layout_rejected",
                    "the Python frames of threads without the GIL could not be read in this "
                    "interpreter (an unknown build?); those events keep their native stacks",
                    buf, sizeof buf);
  return sink(buf, bytes);
}

// A frame's line, by the means of its version, all of which only read. `id`: the code's.
int frame_line(const MemoryReader& mem, const PythonLayout& layout, uintptr_t frame, uintptr_t code,
               uint64_t id) {
  if (layout.frame_objects) return g_api.frame_get_line_number(reinterpret_cast<void*>(frame));
  if (layout.frame_instruction >= 0) {
    uintptr_t instruction = 0;
    if (!mem.field(frame, layout.frame_instruction, &instruction)) return -1;
    const int64_t offset =
        static_cast<int64_t>(instruction) -
        static_cast<int64_t>(code + static_cast<uintptr_t>(layout.code_adaptive));
    if (offset < -2 || offset > (1 << 30)) return -1;
    return cached_line(id, static_cast<int32_t>(offset), [code, offset] {
      return g_api.code_addr2line(reinterpret_cast<void*>(code), static_cast<int>(offset));
    });
  }
  return g_api.interpreter_frame_get_line(reinterpret_cast<void*>(frame));
}

// The walk for a thread that does not hold the GIL (python_layout.h). Fills `out` and returns
// true, or returns false when the layout turned out wrong.
bool walk_frames_without_gil(uintptr_t thread_state, bool checked, PythonFrames* out,
                             PythonMessageSink sink) {
  const PythonLayout& layout = *g_api.layout;
  const MemoryReader mem(checked);
  uintptr_t frame = 0;
  if (!mem.field(thread_state, layout.thread_frame, &frame)) return false;
  if (layout.cframe_current_frame >= 0 && frame != 0 &&
      !mem.field(frame, layout.cframe_current_frame, &frame))
    return false;
  bool ok = true;
  bool sent = true;
  pthread_mutex_lock(&g_code_mutex);
  for (int steps = 0; frame != 0; ++steps) {
    uintptr_t code = 0, previous = 0, filename = 0, qualname = 0;
    uint8_t owner = 0;
    ok = steps < 4096 && (frame & 7) == 0 && mem.field(frame, layout.frame_code, &code) &&
         mem.field(frame, layout.frame_previous, &previous) &&
         (layout.frame_owner < 0 || mem.field(frame, layout.frame_owner, &owner)) &&
         (!layout.frame_objects || mem.is_a(frame, g_api.frame_type));
    if (!ok) break;
    if (layout.owner_cstack >= 0 && owner == layout.owner_cstack) {
      frame = previous;  // the C stack's entry frame: no Python code of its own
      continue;
    }
    ok = mem.is_a(code, g_api.code_type) && mem.field(code, layout.code_filename, &filename) &&
         mem.field(code, layout.code_qualname, &qualname);
    if (!ok) break;
    if (out->depth == kMaxPythonDepth) {
      out->status = PythonStackStatus::kTruncated;
      break;
    }
    const uint64_t id = unreferenced_code_id(code, filename, qualname);
    const Interned interned = intern_code(id);
    if (interned == Interned::kFull) {
      sent = false;
      break;
    }
    if (interned == Interned::kNew) {
      char filename_text[1024];
      char name_text[512];
      int32_t first_line = 0;
      ok = read_str(mem, layout, filename, filename_text, sizeof filename_text) &&
           read_str(mem, layout, qualname, name_text, sizeof name_text) &&
           mem.field(code, layout.code_firstlineno, &first_line);
      if (!ok) break;
      uint8_t buf[sizeof filename_text + sizeof name_text + 64];
      const size_t bytes = encode_python_code(
          id, filename_text, name_text, static_cast<uint32_t>(first_line > 0 ? first_line : 0), buf,
          sizeof buf);
      if (!sink(buf, bytes)) sent = false;
    }
    const int line = frame_line(mem, layout, frame, code, id);
    out->code[out->depth] = id;
    out->line[out->depth] = line > 0 ? static_cast<uint32_t>(line) : 0;
    ++out->depth;
    frame = previous;
  }
  pthread_mutex_unlock(&g_code_mutex);
  if (!ok) return false;
  if (!sent) {
    out->depth = 0;
    out->status = PythonStackStatus::kUnavailable;
  } else if (out->depth == 0) {
    // No frame: a thread that entered Python from C and left it, or a layout that finds none
    // where there are some. Nothing is proved either way.
    out->status = PythonStackStatus::kWithoutGil;
  } else if (out->status != PythonStackStatus::kTruncated) {
    out->status = PythonStackStatus::kCapturedWithoutGil;
  }
  return true;
}

// Without the GIL: read the frames if this interpreter's layout is known and has not been
// proved wrong; the first walk of a process that finds frames is the proof.
void capture_without_gil(void* thread_state, PythonFrames* out, PythonMessageSink sink) {
  out->status = PythonStackStatus::kWithoutGil;
  const auto trial = static_cast<LayoutTrial>(g_layout_trial.load(std::memory_order_acquire));
  if (g_api.layout == nullptr || trial == LayoutTrial::kRejected) return;
  if (!send_interpreter(sink)) return;
  const bool checked = trial != LayoutTrial::kTrusted;
  if (walk_frames_without_gil(reinterpret_cast<uintptr_t>(thread_state), checked, out, sink)) {
    if (checked && out->depth > 0)
      g_layout_trial.store(static_cast<int>(LayoutTrial::kTrusted), std::memory_order_release);
    return;
  }
  out->depth = 0;
  out->status = PythonStackStatus::kWithoutGil;
  int untried = static_cast<int>(LayoutTrial::kUntried);
  if (g_layout_trial.compare_exchange_strong(untried, static_cast<int>(LayoutTrial::kRejected)))
    send_layout_rejected(sink);
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
  if (g_api.current_thread_state != nullptr && g_api.current_is_per_thread) {
    attached = g_api.current_thread_state();
  } else if (own_state != nullptr && g_api.gilstate_check()) {
    // Up to 3.11 the current state is the GIL holder's, which may be another thread's (PyTorch's
    // autograd thread takes the GIL to drop Python objects while the main thread allocates):
    // this thread holds the GIL only when that state is its own.
    attached = own_state;
  }
  if (g_api.is_finalizing != nullptr && g_api.is_finalizing()) {
    if (attached != nullptr || own_state != nullptr) out->status = PythonStackStatus::kUnavailable;
    return;
  }
  if (attached == nullptr) {
    if (own_state != nullptr) capture_without_gil(own_state, out, sink);
    return;
  }
  if (!send_interpreter(sink)) return;
  walk_frames(attached, out, sink);
}

bool python_is_finalizing() {
  return g_api_ready.load(std::memory_order_acquire) && g_api.is_finalizing != nullptr &&
         g_api.is_finalizing() != 0;
}

void forget_sent_python_code() {
  // Another thread may have held these at fork; the child has only the forking thread.
  g_code_mutex = PTHREAD_MUTEX_INITIALIZER;
  g_resolve_mutex = PTHREAD_MUTEX_INITIALIZER;
  std::memset(g_code_slots, 0, sizeof g_code_slots);
  g_code_count = 0;
  std::memset(g_line_slots, 0, sizeof g_line_slots);
  g_interpreter_sent.store(false);
}

}  // namespace vramtrace::preload
