// How to step from a frame to its caller, read from the loaded object's call frame information
// (.eh_frame, found through .eh_frame_hdr's sorted table): where the canonical frame address
// (CFA) is, where the return address and the caller's %rbp were saved.
//
// Only the rules that ordinary compiled code has are kept, the ones a stack walk can apply with
// two loads: the CFA is %rsp or %rbp plus a constant, the return address is at CFA-8, %rbp is
// unchanged or saved at CFA plus a constant. Anything else (CFA expressions, signal frames,
// registers saved in other registers, code without call frame information) is kUnsupported, and
// the caller leaves the whole stack to libunwind.
//
// x86-64 only: the shim runs on x86-64 Linux (the wire, the ABI tests and libunwind's symbols
// are x86-64's).
#pragma once

#include <cstdint>

namespace vramtrace::preload {

struct FrameRule {
  enum class Kind : uint8_t {
    kUnsupported = 0,
    kCfaFromRsp,  // CFA = %rsp + cfa_offset
    kCfaFromRbp,  // CFA = %rbp + cfa_offset
    kOutermost,   // the return address is undefined: the first frame of the thread
  };
  enum class SavedRbp : uint8_t {
    kUnchanged,  // the caller's %rbp is this frame's
    kAtOffset,   // the caller's %rbp is at CFA + rbp_offset
    kUnknown,    // the caller's %rbp cannot be known with these rules
  };
  Kind kind = Kind::kUnsupported;
  SavedRbp rbp = SavedRbp::kUnknown;
  int16_t rbp_offset = 0;
  int32_t cfa_offset = 0;

  // One word for the cache (frame_rule_cache.h), and back.
  uint64_t pack() const;
  static FrameRule unpack(uint64_t word);
};

// The rule for the instruction at `pc` (for a caller's frame, pass its return address minus
// one: the call, not what follows it). Reads the call frame information of the loaded object
// that holds `pc`; slow (microseconds), so callers cache the answer.
FrameRule find_frame_rule(uintptr_t pc);

// find_frame_rule's core: the rule for `pc` from the .eh_frame_hdr at `eh_frame_hdr`, reading
// nothing outside `readable` (an object's loaded segments). Public for tests that build their
// own call frame information.
struct ReadableRange {
  uintptr_t begin, end;
};
FrameRule frame_rule_from_eh_frame_hdr(const ReadableRange* readable, int count,
                                       uintptr_t eh_frame_hdr, uintptr_t pc);

}  // namespace vramtrace::preload
