#include "collector/hot_record_decoder.h"

#include <bit>
#include <cstring>
#include <limits>

namespace vramtrace::collector {
namespace {

static_assert(std::endian::native == std::endian::little,
              "fixed64 fields are copied as they lie on the wire");

enum WireType : unsigned { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// The protobuf wire format, read forward; every read is bounds-checked, and any failure is the
// decoder's cue to decline.
class WireReader {
 public:
  WireReader(const unsigned char* data, std::uint32_t size) : at_(data), end_(data + size) {}

  bool done() const { return at_ == end_; }

  // At most ten bytes; bits past the 64th are dropped, as libprotobuf drops them. Keys and
  // lengths, which libprotobuf reads from five bytes at most, pass max_bytes 5.
  bool varint(std::uint64_t* value, int max_bytes = 10) {
    std::uint64_t result = 0;
    for (int shift = 0; shift < 7 * max_bytes; shift += 7) {
      if (at_ == end_) return false;
      const unsigned char byte = *at_++;
      result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  // A field's key: its number (never 0, below 2^29) and its wire type.
  bool key(std::uint32_t* number, unsigned* type) {
    std::uint64_t tag = 0;
    if (!varint(&tag, 5) || tag > std::numeric_limits<std::uint32_t>::max() || (tag >> 3) == 0)
      return false;
    *number = static_cast<std::uint32_t>(tag >> 3);
    *type = static_cast<unsigned>(tag & 7);
    return true;
  }

  bool fixed64(std::uint64_t* value) {
    if (end_ - at_ < 8) return false;
    std::memcpy(value, at_, 8);
    at_ += 8;
    return true;
  }

  // A length-delimited field's bytes, as a reader of their own.
  bool length_delimited(WireReader* inner) {
    std::uint64_t length = 0;
    if (!varint(&length, 5) || length > static_cast<std::uint64_t>(end_ - at_)) return false;
    *inner = WireReader(at_, static_cast<std::uint32_t>(length));
    at_ += length;
    return true;
  }

  // A field this decoder does not keep: one libprotobuf would keep among the unknown fields,
  // which the collector never reads. Groups are declined.
  bool skip(unsigned type) {
    std::uint64_t ignored = 0;
    WireReader inner(nullptr, 0);
    switch (type) {
      case kVarint:
        return varint(&ignored);
      case kFixed64:
        return fixed64(&ignored);
      case kLength:
        return length_delimited(&inner);
      case kFixed32:
        if (end_ - at_ < 4) return false;
        at_ += 4;
        return true;
      default:
        return false;
    }
  }

 private:
  const unsigned char* at_;
  const unsigned char* end_;
};

// A repeated fixed64 field's values, packed (a length-delimited run of whole values) or one
// by one, appended.
bool read_fixed64s(WireReader& reader, unsigned type,
                   google::protobuf::RepeatedField<std::uint64_t>* out) {
  std::uint64_t value = 0;
  if (type == kFixed64) {
    if (!reader.fixed64(&value)) return false;
    out->Add(value);
    return true;
  }
  WireReader packed(nullptr, 0);
  if (!reader.length_delimited(&packed)) return false;
  while (!packed.done()) {
    if (!packed.fixed64(&value)) return false;  // a run of odd length
    out->Add(value);
  }
  return true;
}

// A repeated uint32 field's values, packed or one by one, appended.
bool read_uint32s(WireReader& reader, unsigned type,
                  google::protobuf::RepeatedField<std::uint32_t>* out) {
  std::uint64_t value = 0;
  if (type == kVarint) {
    if (!reader.varint(&value)) return false;
    out->Add(static_cast<std::uint32_t>(value));
    return true;
  }
  WireReader packed(nullptr, 0);
  if (!reader.length_delimited(&packed)) return false;
  while (!packed.done()) {
    if (!packed.varint(&value)) return false;
    out->Add(static_cast<std::uint32_t>(value));
  }
  return true;
}

// Whether a field of a repeated scalar type came in a wire type its parser takes: its own, or
// packed.
bool repeated_type(unsigned type, unsigned element) {
  return type == element || type == kLength;
}

void clear_alloc_fields(wire::Alloc& m, std::uint64_t fields) {
  for (; fields != 0; fields &= fields - 1) {
    // clang-format off
    switch (std::countr_zero(fields)) {
      case wire::Alloc::kTidFieldNumber: m.clear_tid(); break;
      case wire::Alloc::kDeviceFieldNumber: m.clear_device(); break;
      case wire::Alloc::kStreamFieldNumber: m.clear_stream(); break;
      case wire::Alloc::kKindFieldNumber: m.clear_kind(); break;
      case wire::Alloc::kApiFieldNumber: m.clear_api(); break;
      case wire::Alloc::kAddressFieldNumber: m.clear_address(); break;
      case wire::Alloc::kSizeFieldNumber: m.clear_size(); break;
      case wire::Alloc::kRequestedSizeFieldNumber: m.clear_requested_size(); break;
      case wire::Alloc::kResultFieldNumber: m.clear_result(); break;
      case wire::Alloc::kPoolFieldNumber: m.clear_pool(); break;
      case wire::Alloc::kFlagsFieldNumber: m.clear_flags(); break;
      case wire::Alloc::kStackFieldNumber: m.clear_stack(); break;
      case wire::Alloc::kStackTruncatedFieldNumber: m.clear_stack_truncated(); break;
      case wire::Alloc::kHandleFieldNumber: m.clear_handle(); break;
      case wire::Alloc::kSameStackAsFieldNumber: m.clear_same_stack_as(); break;
      case wire::Alloc::kAllocatorAllocatedFieldNumber: m.clear_allocator_allocated(); break;
      case wire::Alloc::kAllocatorReservedFieldNumber: m.clear_allocator_reserved(); break;
      case wire::Alloc::kPythonCodeFieldNumber: m.clear_python_code(); break;
      case wire::Alloc::kPythonLineFieldNumber: m.clear_python_line(); break;
      case wire::Alloc::kPythonStackFieldNumber: m.clear_python_stack(); break;
      case wire::Alloc::kCorrelationIdFieldNumber: m.clear_correlation_id(); break;
      case wire::Alloc::kStackNameFieldNumber: m.clear_stack_name(); break;
      case wire::Alloc::kOffsetFieldNumber: m.clear_offset(); break;
      case wire::Alloc::kDeviceFreeFieldNumber: m.clear_device_free(); break;
      case wire::Alloc::kDeviceTotalFieldNumber: m.clear_device_total(); break;
      default: break;
    }
    // clang-format on
  }
}

void clear_free_fields(wire::Free& m, std::uint64_t fields) {
  for (; fields != 0; fields &= fields - 1) {
    // clang-format off
    switch (std::countr_zero(fields)) {
      case wire::Free::kTidFieldNumber: m.clear_tid(); break;
      case wire::Free::kDeviceFieldNumber: m.clear_device(); break;
      case wire::Free::kStreamFieldNumber: m.clear_stream(); break;
      case wire::Free::kApiFieldNumber: m.clear_api(); break;
      case wire::Free::kAddressFieldNumber: m.clear_address(); break;
      case wire::Free::kStackFieldNumber: m.clear_stack(); break;
      case wire::Free::kStackTruncatedFieldNumber: m.clear_stack_truncated(); break;
      case wire::Free::kSizeFieldNumber: m.clear_size(); break;
      case wire::Free::kAllocatorAllocatedFieldNumber: m.clear_allocator_allocated(); break;
      case wire::Free::kAllocatorReservedFieldNumber: m.clear_allocator_reserved(); break;
      case wire::Free::kPythonCodeFieldNumber: m.clear_python_code(); break;
      case wire::Free::kPythonLineFieldNumber: m.clear_python_line(); break;
      case wire::Free::kPythonStackFieldNumber: m.clear_python_stack(); break;
      case wire::Free::kCorrelationIdFieldNumber: m.clear_correlation_id(); break;
      case wire::Free::kStackNameFieldNumber: m.clear_stack_name(); break;
      case wire::Free::kSameStackAsFieldNumber: m.clear_same_stack_as(); break;
      case wire::Free::kNestedFieldNumber: m.clear_nested(); break;
      default: break;
    }
    // clang-format on
  }
}

// The narrowing libprotobuf applies to a varint read into a 32-bit field: the low 32 bits.
std::int32_t as_int32(std::uint64_t v) {
  return static_cast<std::int32_t>(v);
}
std::uint32_t as_uint32(std::uint64_t v) {
  return static_cast<std::uint32_t>(v);
}

// The numbers of a message's repeated fields: its return addresses, its Python frames' code
// ids and their lines.
struct RepeatedNumbers {
  std::uint32_t stack, python_code, python_line;
};

// Reads a whole Alloc or Free into `m`: the repeated fields by `numbers`, every varint through
// set_varint(number, value), which is false for a number that names no varint field.
// *set_fields holds the fields the last record set (bit n: field n), and becomes this one's; on
// failure, every field, as any may hold something. clear(fields) clears fields of `m`: the
// repeated ones the last record set before reading, as reading appends to them, and after it
// the others the last record set and this one did not (records of a kind mostly set the same
// fields, so that is often none).
template <class Message, class SetVarint, class ClearFields>
bool read_fields(WireReader reader, Message& m, RepeatedNumbers numbers, std::uint64_t* set_fields,
                 SetVarint&& set_varint, ClearFields&& clear) {
  const std::uint64_t repeated = std::uint64_t{1} << numbers.stack |
                                 std::uint64_t{1} << numbers.python_code |
                                 std::uint64_t{1} << numbers.python_line;
  const std::uint64_t before = *set_fields;
  if ((before & repeated) != 0) clear(before & repeated);
  *set_fields = ~std::uint64_t{0};
  std::uint64_t set = 0;
  while (!reader.done()) {
    std::uint32_t number = 0;
    unsigned type = 0;
    if (!reader.key(&number, &type)) return false;
    bool read = false;  // false: not a field kept, or not in a wire type its parser takes
    if (number == numbers.stack || number == numbers.python_code) {
      if (repeated_type(type, kFixed64)) {
        if (!read_fixed64s(reader, type,
                           number == numbers.stack ? m.mutable_stack() : m.mutable_python_code()))
          return false;
        read = true;
      }
    } else if (number == numbers.python_line) {
      if (repeated_type(type, kVarint)) {
        if (!read_uint32s(reader, type, m.mutable_python_line())) return false;
        read = true;
      }
    } else if (number < 64 && type == kVarint) {
      std::uint64_t v = 0;
      if (!reader.varint(&v)) return false;
      // A number with no field: its value is read, and dropped.
      if (set_varint(number, v)) set |= std::uint64_t{1} << number;
      continue;
    }
    if (read)
      set |= std::uint64_t{1} << number;
    else if (!reader.skip(type))
      return false;
  }
  if (const std::uint64_t stale = before & ~set & ~repeated; stale != 0) clear(stale);
  *set_fields = set;
  return true;
}

}  // namespace

bool HotRecordDecoder::decode_alloc(const unsigned char* data, std::uint32_t size) {
  wire::Alloc& m = alloc_;
  return read_fields(
      WireReader(data, size), m,
      {wire::Alloc::kStackFieldNumber, wire::Alloc::kPythonCodeFieldNumber,
       wire::Alloc::kPythonLineFieldNumber},
      &alloc_set_,
      [&m](std::uint32_t number, std::uint64_t v) {
        // clang-format off
    switch (number) {
      case wire::Alloc::kTidFieldNumber: m.set_tid(as_uint32(v)); return true;
      case wire::Alloc::kDeviceFieldNumber: m.set_device(as_int32(v)); return true;
      case wire::Alloc::kStreamFieldNumber: m.set_stream(v); return true;
      case wire::Alloc::kKindFieldNumber: m.set_kind(static_cast<wire::Kind>(as_int32(v))); return true;
      case wire::Alloc::kApiFieldNumber: m.set_api(static_cast<wire::Api>(as_int32(v))); return true;
      case wire::Alloc::kAddressFieldNumber: m.set_address(v); return true;
      case wire::Alloc::kSizeFieldNumber: m.set_size(v); return true;
      case wire::Alloc::kRequestedSizeFieldNumber: m.set_requested_size(v); return true;
      case wire::Alloc::kResultFieldNumber: m.set_result(as_int32(v)); return true;
      case wire::Alloc::kPoolFieldNumber: m.set_pool(v); return true;
      case wire::Alloc::kFlagsFieldNumber: m.set_flags(as_uint32(v)); return true;
      case wire::Alloc::kStackTruncatedFieldNumber: m.set_stack_truncated(v != 0); return true;
      case wire::Alloc::kHandleFieldNumber: m.set_handle(v); return true;
      case wire::Alloc::kSameStackAsFieldNumber: m.set_same_stack_as(as_uint32(v)); return true;
      case wire::Alloc::kAllocatorAllocatedFieldNumber: m.set_allocator_allocated(v); return true;
      case wire::Alloc::kAllocatorReservedFieldNumber: m.set_allocator_reserved(v); return true;
      case wire::Alloc::kPythonStackFieldNumber: m.set_python_stack(static_cast<wire::PythonStackStatus>(as_int32(v))); return true;
      case wire::Alloc::kCorrelationIdFieldNumber: m.set_correlation_id(as_uint32(v)); return true;
      case wire::Alloc::kStackNameFieldNumber: m.set_stack_name(as_uint32(v)); return true;
      case wire::Alloc::kOffsetFieldNumber: m.set_offset(v); return true;
      case wire::Alloc::kDeviceFreeFieldNumber: m.set_device_free(v); return true;
      case wire::Alloc::kDeviceTotalFieldNumber: m.set_device_total(v); return true;
      default: return false;
    }
        // clang-format on
      },
      [&m](std::uint64_t fields) { clear_alloc_fields(m, fields); });
}

bool HotRecordDecoder::decode_free(const unsigned char* data, std::uint32_t size) {
  wire::Free& m = free_;
  return read_fields(
      WireReader(data, size), m,
      {wire::Free::kStackFieldNumber, wire::Free::kPythonCodeFieldNumber,
       wire::Free::kPythonLineFieldNumber},
      &free_set_,
      [&m](std::uint32_t number, std::uint64_t v) {
        // clang-format off
    switch (number) {
      case wire::Free::kTidFieldNumber: m.set_tid(as_uint32(v)); return true;
      case wire::Free::kDeviceFieldNumber: m.set_device(as_int32(v)); return true;
      case wire::Free::kStreamFieldNumber: m.set_stream(v); return true;
      case wire::Free::kApiFieldNumber: m.set_api(static_cast<wire::Api>(as_int32(v))); return true;
      case wire::Free::kAddressFieldNumber: m.set_address(v); return true;
      case wire::Free::kStackTruncatedFieldNumber: m.set_stack_truncated(v != 0); return true;
      case wire::Free::kSizeFieldNumber: m.set_size(v); return true;
      case wire::Free::kAllocatorAllocatedFieldNumber: m.set_allocator_allocated(v); return true;
      case wire::Free::kAllocatorReservedFieldNumber: m.set_allocator_reserved(v); return true;
      case wire::Free::kPythonStackFieldNumber: m.set_python_stack(static_cast<wire::PythonStackStatus>(as_int32(v))); return true;
      case wire::Free::kCorrelationIdFieldNumber: m.set_correlation_id(as_uint32(v)); return true;
      case wire::Free::kStackNameFieldNumber: m.set_stack_name(as_uint32(v)); return true;
      case wire::Free::kSameStackAsFieldNumber: m.set_same_stack_as(as_uint32(v)); return true;
      case wire::Free::kNestedFieldNumber: m.set_nested(v != 0); return true;
      default: return false;
    }
        // clang-format on
      },
      [&m](std::uint64_t fields) { clear_free_fields(m, fields); });
}

}  // namespace vramtrace::collector
