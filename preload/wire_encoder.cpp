#include "wire_encoder.h"

#include <pb_encode.h>

#include <cstring>

#include "nanopb/vramtrace.pb.h"

namespace vramtrace::preload {
namespace {

bool encode_c_string(pb_ostream_t* stream, const pb_field_t* field, void* const* arg) {
  const char* s = static_cast<const char*>(*arg);
  if (s == nullptr) return true;
  return pb_encode_tag_for_field(stream, field) &&
         pb_encode_string(stream, reinterpret_cast<const pb_byte_t*>(s), std::strlen(s));
}

struct NulSeparated {
  const char* data;
  size_t bytes;
};

// A repeated string field from NUL-separated strings (the layout of /proc/self/cmdline).
bool encode_nul_separated(pb_ostream_t* stream, const pb_field_t* field, void* const* arg) {
  auto* list = static_cast<const NulSeparated*>(*arg);
  size_t pos = 0;
  while (pos < list->bytes) {
    size_t len = strnlen(list->data + pos, list->bytes - pos);
    if (!pb_encode_tag_for_field(stream, field) ||
        !pb_encode_string(stream, reinterpret_cast<const pb_byte_t*>(list->data + pos), len))
      return false;
    pos += len + 1;
  }
  return true;
}

pb_callback_t string_field(const char* s) {
  pb_callback_t cb{};
  cb.funcs.encode = &encode_c_string;
  cb.arg = const_cast<char*>(s);
  return cb;
}

size_t encode(const vramtrace_wire_Envelope& envelope, uint8_t* out, size_t capacity) {
  pb_ostream_t stream = pb_ostream_from_buffer(out, capacity);
  if (!pb_encode(&stream, vramtrace_wire_Envelope_fields, &envelope)) return 0;
  return stream.bytes_written;
}

}  // namespace

// The two hot messages, Alloc and Free, are written field by field with the generated field
// numbers, straight into a byte buffer. nanopb's generic pb_encode walks the descriptor of every
// field of Envelope and of the message (measured: more than half of the shim's cost per event
// at stack depth 16, see docs/performance.md), and even its primitives pass every byte run
// through a stream callback (a fifth of what was left); this writes only the fields that are
// set, as proto3 does. tests/transport/wire_test.cpp decodes the result with libprotobuf.
namespace {

constexpr size_t kMaxVarintBytes = 10;

class FieldWriter {
 public:
  FieldWriter(uint8_t* out, size_t capacity) : begin_(out), next_(out), end_(out + capacity) {}

  void varint(uint32_t tag, uint64_t value) {
    if (value != 0) present_varint(tag, value);
  }
  // An `optional` field: written even when 0, since presence is what it says.
  void present_varint(uint32_t tag, uint64_t value) {
    key(tag, PB_WT_VARINT);
    put_varint(value);
  }
  // proto3 int32: negative values are sign-extended to 64 bits.
  void int32(uint32_t tag, int32_t value) {
    varint(tag, static_cast<uint64_t>(static_cast<int64_t>(value)));
  }
  void packed_fixed64(uint32_t tag, const uintptr_t* values, int count) {
    if (count <= 0) return;
    const size_t bytes = static_cast<size_t>(count) * sizeof(uint64_t);
    static_assert(
        sizeof(uintptr_t) == sizeof(uint64_t) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
        "fixed64 is little-endian on the wire: the array is copied as it is");
    key(tag, PB_WT_STRING);
    put_varint(bytes);
    put_bytes(values, bytes);
  }
  void packed_varint32(uint32_t tag, const uint32_t* values, int count) {
    if (count <= 0) return;
    size_t bytes = 0;
    for (int i = 0; i < count; ++i) bytes += varint_bytes(values[i]);
    key(tag, PB_WT_STRING);
    put_varint(bytes);
    for (int i = 0; i < count; ++i) put_varint(values[i]);
  }
  // A length-delimited field holding `bytes` as they are (a message already encoded).
  void message(uint32_t tag, const uint8_t* bytes, size_t size) {
    key(tag, PB_WT_STRING);
    put_varint(size);
    put_bytes(bytes, size);
  }
  size_t size() const { return ok_ ? static_cast<size_t>(next_ - begin_) : 0; }

 private:
  static size_t varint_bytes(uint64_t value) {
    size_t bytes = 1;
    while (value >= 0x80) {
      value >>= 7;
      ++bytes;
    }
    return bytes;
  }
  void key(uint32_t tag, pb_wire_type_t type) {
    put_varint((static_cast<uint64_t>(tag) << 3) | static_cast<uint64_t>(type));
  }
  void put_varint(uint64_t value) {
    const size_t room = static_cast<size_t>(end_ - next_);
    if (!ok_ || (room < kMaxVarintBytes && room < varint_bytes(value))) {
      ok_ = false;
      return;
    }
    while (value >= 0x80) {
      *next_++ = static_cast<uint8_t>(value | 0x80);
      value >>= 7;
    }
    *next_++ = static_cast<uint8_t>(value);
  }
  void put_bytes(const void* bytes, size_t size) {
    if (!ok_ || static_cast<size_t>(end_ - next_) < size) {
      ok_ = false;
      return;
    }
    std::memcpy(next_, bytes, size);
    next_ += size;
  }

  uint8_t* begin_;
  uint8_t* next_;
  uint8_t* end_;
  bool ok_ = true;
};

// Wraps a message body as the Envelope field `tag`.
size_t wrap_in_envelope(uint32_t tag, const uint8_t* body, size_t body_bytes, uint8_t* out,
                        size_t capacity) {
  if (body_bytes == 0) return 0;
  FieldWriter w(out, capacity);
  w.message(tag, body, body_bytes);
  return w.size();
}

int clamp_depth(const Stack& stack) {
  return stack.depth < kMaxStackDepth ? stack.depth : kMaxStackDepth;
}

// The field numbers of a stack's fields in one message type.
struct StackTags {
  uint32_t stack, truncated, python_code, python_line, python_status, name, same_as;
};

// A stack's fields, which Alloc, Free and FreeFailed share: its frames, or only the name they
// were sent under (stack_names.h).
void write_stack(FieldWriter& w, const Stack& stack, const StackTags& tags) {
  const bool frames = stack.same_as == 0;
  if (frames) w.packed_fixed64(tags.stack, stack.ips, clamp_depth(stack));
  w.varint(tags.truncated, stack.truncated || stack.depth > kMaxStackDepth ? 1 : 0);
  if (stack.python != nullptr) {
    const PythonFrames& py = *stack.python;
    const int depth = sent_depth(py);
    if (frames) {
      w.packed_fixed64(tags.python_code, reinterpret_cast<const uintptr_t*>(py.code), depth);
      w.packed_varint32(tags.python_line, py.line, depth);
    }
    w.varint(tags.python_status, static_cast<uint64_t>(py.status));
  }
  w.varint(tags.name, stack.name);
  w.varint(tags.same_as, stack.same_as);
}

#define VRAMTRACE_STACK_TAGS(Message)                                                           \
  StackTags {                                                                                   \
    vramtrace_wire_##Message##_stack_tag, vramtrace_wire_##Message##_stack_truncated_tag,       \
        vramtrace_wire_##Message##_python_code_tag, vramtrace_wire_##Message##_python_line_tag, \
        vramtrace_wire_##Message##_python_stack_tag, vramtrace_wire_##Message##_stack_name_tag, \
        vramtrace_wire_##Message##_same_stack_as_tag                                            \
  }

}  // namespace

size_t encode_alloc(const AllocEvent& e, const Stack& stack, uint8_t* out, size_t capacity) {
  uint8_t body[kMaxEventBytes];
  FieldWriter w(body, sizeof body);
  w.varint(vramtrace_wire_Alloc_tid_tag, e.tid);
  w.int32(vramtrace_wire_Alloc_device_tag, e.device);
  w.varint(vramtrace_wire_Alloc_stream_tag, e.stream);
  w.varint(vramtrace_wire_Alloc_kind_tag, static_cast<uint64_t>(e.kind));
  w.varint(vramtrace_wire_Alloc_api_tag, static_cast<uint64_t>(e.api));
  w.varint(vramtrace_wire_Alloc_address_tag, e.address);
  w.varint(vramtrace_wire_Alloc_size_tag, e.size);
  // Absent: the same as size.
  if (e.requested_size != e.size)
    w.present_varint(vramtrace_wire_Alloc_requested_size_tag, e.requested_size);
  w.int32(vramtrace_wire_Alloc_result_tag, e.result);
  w.varint(vramtrace_wire_Alloc_pool_tag, e.pool);
  w.varint(vramtrace_wire_Alloc_flags_tag, e.flags);
  w.varint(vramtrace_wire_Alloc_handle_tag, e.vmm_handle);
  w.varint(vramtrace_wire_Alloc_offset_tag, e.vmm_offset);
  if (e.has_allocator_totals) {
    w.present_varint(vramtrace_wire_Alloc_allocator_allocated_tag, e.allocator_allocated);
    w.present_varint(vramtrace_wire_Alloc_allocator_reserved_tag, e.allocator_reserved);
  }
  w.varint(vramtrace_wire_Alloc_correlation_id_tag, e.correlation_id);
  if (e.has_device_memory) {
    w.present_varint(vramtrace_wire_Alloc_device_free_tag, e.device_free);
    w.present_varint(vramtrace_wire_Alloc_device_total_tag, e.device_total);
  }
  write_stack(w, stack, VRAMTRACE_STACK_TAGS(Alloc));
  return wrap_in_envelope(vramtrace_wire_Envelope_alloc_tag, body, w.size(), out, capacity);
}

size_t encode_free(const FreeEvent& e, const Stack& stack, uint8_t* out, size_t capacity) {
  uint8_t body[kMaxEventBytes];
  FieldWriter w(body, sizeof body);
  w.varint(vramtrace_wire_Free_tid_tag, e.tid);
  // A negative device is one not known: sent as -1 it would take eleven bytes of every free.
  if (e.device >= 0)
    w.present_varint(vramtrace_wire_Free_device_tag, static_cast<uint32_t>(e.device));
  w.varint(vramtrace_wire_Free_stream_tag, e.stream);
  w.varint(vramtrace_wire_Free_api_tag, static_cast<uint64_t>(e.api));
  w.varint(vramtrace_wire_Free_address_tag, e.address);
  w.varint(vramtrace_wire_Free_size_tag, e.size);
  if (e.has_allocator_totals) {
    w.present_varint(vramtrace_wire_Free_allocator_allocated_tag, e.allocator_allocated);
    w.present_varint(vramtrace_wire_Free_allocator_reserved_tag, e.allocator_reserved);
  }
  w.varint(vramtrace_wire_Free_correlation_id_tag, e.correlation_id);
  w.varint(vramtrace_wire_Free_nested_tag, e.nested ? 1 : 0);
  write_stack(w, stack, VRAMTRACE_STACK_TAGS(Free));
  return wrap_in_envelope(vramtrace_wire_Envelope_free_tag, body, w.size(), out, capacity);
}

size_t encode_free_failed(uint64_t free_seq, int32_t result, const Stack& stack, uint8_t* out,
                          size_t capacity) {
  uint8_t body[kMaxEventBytes];
  FieldWriter w(body, sizeof body);
  w.varint(vramtrace_wire_FreeFailed_free_seq_tag, free_seq);
  w.int32(vramtrace_wire_FreeFailed_result_tag, result);
  write_stack(w, stack, VRAMTRACE_STACK_TAGS(FreeFailed));
  return wrap_in_envelope(vramtrace_wire_Envelope_free_failed_tag, body, w.size(), out, capacity);
}

// The rare messages go through nanopb's generic encoder. Each encoder zeroes only the union
// member it fills: the Envelope holds the largest message's fixed arrays.
size_t encode_live_checkpoint(uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_live_checkpoint_tag;
  env.body.live_checkpoint = vramtrace_wire_LiveCheckpoint{};
  return encode(env, out, capacity);
}

size_t encode_live_query(uint64_t query_id, uint64_t checkpoint_seq, uint8_t* out,
                         size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_live_query_tag;
  env.body.live_query = vramtrace_wire_LiveQuery{query_id, checkpoint_seq};
  return encode(env, out, capacity);
}

size_t encode_module(const ModuleInfo& module, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_module_tag;
  auto& m = env.body.module;
  m = vramtrace_wire_Module{};
  m.start = module.start;
  m.end = module.end;
  m.load_bias = module.load_bias;
  m.path = string_field(module.path);
  uint32_t id_bytes = module.build_id_bytes;
  if (id_bytes > sizeof m.build_id.bytes) id_bytes = 0;  // not a real GNU build-id
  if (id_bytes != 0) std::memcpy(m.build_id.bytes, module.build_id, id_bytes);
  m.build_id.size = static_cast<pb_size_t>(id_bytes);
  return encode(env, out, capacity);
}

size_t encode_process_start(const ProcessStartInfo& info, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_process_start_tag;
  auto& m = env.body.process_start;
  m = vramtrace_wire_ProcessStart{};
  m.pid = info.pid;
  m.ppid = info.ppid;
  m.uid = info.uid;
  m.start_realtime_ns = info.start_realtime_ns;
  m.exe = string_field(info.exe);
  NulSeparated argv{info.argv, info.argv_bytes};
  m.argv.funcs.encode = &encode_nul_separated;
  m.argv.arg = &argv;
  m.hostname = string_field(info.hostname);
  m.argv_cut = info.argv_cut;
  m.shim_version = 1;
  m.unwinder = string_field(info.unwinder);
  m.has_rank = info.has_rank;
  m.rank = info.rank;
  m.has_local_rank = info.has_local_rank;
  m.local_rank = info.local_rank;
  m.has_world_size = info.has_world_size;
  m.world_size = info.world_size;
  m.backend = static_cast<vramtrace_wire_Backend>(info.backend);
  return encode(env, out, capacity);
}

size_t encode_process_exit(int32_t exit_status, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_process_exit_tag;
  env.body.process_exit = vramtrace_wire_ProcessExit{exit_status};
  return encode(env, out, capacity);
}

size_t encode_thread_name(uint32_t tid, const char* name, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_thread_name_tag;
  auto& m = env.body.thread_name;
  m = vramtrace_wire_ThreadName{};
  m.tid = tid;
  m.name = string_field(name);
  return encode(env, out, capacity);
}

size_t encode_child_exit(uint32_t pid, int32_t wait_status, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_child_exit_tag;
  env.body.child_exit = vramtrace_wire_ChildExit{pid, wait_status};
  return encode(env, out, capacity);
}

size_t encode_notice(int severity, const char* name, const char* text, uint8_t* out,
                     size_t capacity, uint64_t count) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_notice_tag;
  auto& m = env.body.notice;
  m = vramtrace_wire_Notice{};
  m.severity = static_cast<vramtrace_wire_Notice_Severity>(severity);
  m.name = string_field(name);
  m.text = string_field(text);
  m.count = count;
  return encode(env, out, capacity);
}

size_t encode_python_code(uint64_t id, const char* filename, const char* name, uint32_t first_line,
                          uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_python_code_tag;
  auto& m = env.body.python_code;
  m = vramtrace_wire_PythonCode{};
  m.id = id;
  m.filename = string_field(filename);
  m.name = string_field(name);
  m.first_line = first_line;
  return encode(env, out, capacity);
}

size_t encode_python_interpreter(uint64_t api_address, const char* version, uint8_t* out,
                                 size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_python_interpreter_tag;
  auto& m = env.body.python_interpreter;
  m = vramtrace_wire_PythonInterpreter{};
  m.api_address = api_address;
  m.version = string_field(version);
  return encode(env, out, capacity);
}

// Markers are as frequent as allocations in annotated loops, so, like Alloc and Free, they are
// written field by field: one pass to size the body (nanopb's sizing stream), one to write
// it behind the Envelope's tag and length, with no buffer in between.
size_t encode_marker(const MarkerEvent& e, uint8_t* out, size_t capacity) {
  auto write_body = [&e](pb_ostream_t* s) {
    auto varint = [s](uint32_t tag, uint64_t value) {
      return value == 0 || (pb_encode_tag(s, PB_WT_VARINT, tag) && pb_encode_varint(s, value));
    };
    auto text = [s](uint32_t tag, const char* value) {
      const size_t bytes = value == nullptr ? 0 : std::strlen(value);
      return bytes == 0 || (pb_encode_tag(s, PB_WT_STRING, tag) &&
                            pb_encode_string(s, reinterpret_cast<const pb_byte_t*>(value), bytes));
    };
    return varint(vramtrace_wire_Marker_tid_tag, e.tid) &&
           varint(vramtrace_wire_Marker_type_tag, static_cast<uint64_t>(e.type)) &&
           varint(vramtrace_wire_Marker_source_tag, static_cast<uint64_t>(e.source)) &&
           text(vramtrace_wire_Marker_domain_tag, e.domain) &&
           text(vramtrace_wire_Marker_name_tag, e.name) &&
           varint(vramtrace_wire_Marker_range_id_tag, e.range_id) &&
           varint(vramtrace_wire_Marker_color_tag, e.color) &&
           varint(vramtrace_wire_Marker_category_tag, e.category);
  };
  pb_ostream_t sizing = PB_OSTREAM_SIZING;
  if (!write_body(&sizing)) return 0;
  pb_ostream_t stream = pb_ostream_from_buffer(out, capacity);
  if (!pb_encode_tag(&stream, PB_WT_STRING, vramtrace_wire_Envelope_marker_tag) ||
      !pb_encode_varint(&stream, sizing.bytes_written) || !write_body(&stream))
    return 0;
  return stream.bytes_written;
}

size_t encode_memory_activity(const MemoryActivityEvent& e, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_memory_activity_tag;
  auto& m = env.body.memory_activity;
  m = vramtrace_wire_MemoryActivity{};
  m.operation = static_cast<vramtrace_wire_MemoryActivity_Operation>(e.operation);
  m.kind = static_cast<vramtrace_wire_Kind>(e.kind);
  m.correlation_id = e.correlation_id;
  m.address = e.address;
  m.size = e.size;
  m.device = e.device;
  m.stream = e.stream;
  m.timestamp_ns = e.timestamp_ns;
  m.pool_address = e.pool_address;
  m.release_threshold = e.release_threshold;
  m.utilized_size = e.utilized_size;
  m.min_bytes_to_keep = e.min_bytes_to_keep;
  m.source = string_field(e.source);
  return encode(env, out, capacity);
}

}  // namespace vramtrace::preload
