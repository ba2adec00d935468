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

template <class Message>
void copy_stack(const Stack& stack, Message& m) {
  int depth = stack.depth < kMaxStackDepth ? stack.depth : kMaxStackDepth;
  for (int i = 0; i < depth; ++i) m.stack[i] = stack.ips[i];
  m.stack_count = static_cast<pb_size_t>(depth);
  m.stack_truncated = stack.truncated || stack.depth > kMaxStackDepth;
}

}  // namespace

// Each encoder zeroes only the union member it fills: the Envelope holds the largest
// message's fixed arrays, and clearing all of it on every event would be wasted time.
size_t encode_alloc(const AllocEvent& e, const Stack& stack, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_alloc_tag;
  auto& m = env.body.alloc;
  m.tid = e.tid;
  m.device = e.device;
  m.stream = e.stream;
  m.kind = static_cast<vramtrace_wire_Kind>(e.kind);
  m.api = static_cast<vramtrace_wire_Api>(e.api);
  m.address = e.address;
  m.size = e.size;
  m.requested_size = e.requested_size;
  m.result = e.result;
  m.pool = e.pool;
  m.flags = e.flags;
  copy_stack(stack, m);
  return encode(env, out, capacity);
}

size_t encode_free(const FreeEvent& e, const Stack& stack, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_free_tag;
  auto& m = env.body.free;
  m.tid = e.tid;
  m.device = e.device;
  m.stream = e.stream;
  m.api = static_cast<vramtrace_wire_Api>(e.api);
  m.address = e.address;
  copy_stack(stack, m);
  return encode(env, out, capacity);
}

size_t encode_free_failed(uint64_t free_seq, int32_t result, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_free_failed_tag;
  env.body.free_failed = vramtrace_wire_FreeFailed{free_seq, result};
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
  m.shim_version = 1;
  m.unwinder = string_field(info.unwinder);
  return encode(env, out, capacity);
}

size_t encode_process_exit(int32_t exit_status, uint8_t* out, size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_process_exit_tag;
  env.body.process_exit = vramtrace_wire_ProcessExit{exit_status};
  return encode(env, out, capacity);
}

size_t encode_notice(int severity, const char* name, const char* text, uint8_t* out,
                     size_t capacity) {
  vramtrace_wire_Envelope env;
  env.which_body = vramtrace_wire_Envelope_notice_tag;
  auto& m = env.body.notice;
  m = vramtrace_wire_Notice{};
  m.severity = static_cast<vramtrace_wire_Notice_Severity>(severity);
  m.name = string_field(name);
  m.text = string_field(text);
  return encode(env, out, capacity);
}

}  // namespace vramtrace::preload
