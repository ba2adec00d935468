// HotRecordDecoder: the shim's Alloc and Free records, most of a trace, decoded by hand into
// reused messages.
//
// libprotobuf's general parser pays, per message, a Clear() of every field and the set-up of
// its input stream; on a storm of small records that was a tenth of the collector's CPU. This
// decoder reads the wire format directly, sets the fields it meets through the generated
// setters, and clears only the fields the previous record set and this one did not. It is
// exact where it answers: anything it does not read as libprotobuf would (a group, a malformed
// varint, an overlong key or length, a packed field of odd length) makes it decline, and the
// caller parses the record the general way.
#pragma once

#include <cstdint>

#include "vramtrace.pb.h"

namespace vramtrace::collector {

class HotRecordDecoder {
 public:
  // Fills alloc() from `size` bytes of a serialized Alloc. False when it declines; alloc() is
  // then unspecified until the next call that succeeds.
  bool decode_alloc(const unsigned char* data, std::uint32_t size);
  // The same for Free.
  bool decode_free(const unsigned char* data, std::uint32_t size);

  const wire::Alloc& alloc() const { return alloc_; }
  const wire::Free& free() const { return free_; }

 private:
  wire::Alloc alloc_;
  wire::Free free_;
  // Bit n: field n was set by the last decode, and must be cleared before the next.
  std::uint64_t alloc_set_ = 0, free_set_ = 0;
};

}  // namespace vramtrace::collector
