#include "frame_rules.h"

#include <link.h>

#include <cstring>

namespace vramtrace::preload {

uint64_t FrameRule::pack() const {
  return uint64_t(uint8_t(kind)) | uint64_t(uint8_t(rbp)) << 8 |
         uint64_t(uint16_t(rbp_offset)) << 16 | uint64_t(uint32_t(cfa_offset)) << 32;
}

FrameRule FrameRule::unpack(uint64_t word) {
  FrameRule rule;
  rule.kind = Kind(word & 0xff);
  rule.rbp = SavedRbp((word >> 8) & 0xff);
  rule.rbp_offset = int16_t(uint16_t(word >> 16));
  rule.cfa_offset = int32_t(uint32_t(word >> 32));
  return rule;
}

namespace {

// DWARF register numbers of x86-64.
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;
constexpr uint64_t kRegReturnAddress = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeAbsPtr = 0x00, kPeUleb128 = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03,
                  kPeUdata8 = 0x04, kPeSleb128 = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b,
                  kPeSdata8 = 0x0c;
constexpr uint8_t kPePcRel = 0x10, kPeDataRel = 0x30, kPeIndirect = 0x80;

// The readable ranges of one loaded object: every read of its call frame information is checked
// against them, so that a malformed section cannot send the walk outside the object.
struct ObjectMemory {
  static constexpr int kMaxSegments = 16;
  ReadableRange segments[kMaxSegments];
  int count = 0;

  bool holds(uintptr_t address, uintptr_t bytes) const {
    for (int i = 0; i < count; ++i)
      if (address >= segments[i].begin && address <= segments[i].end &&
          bytes <= segments[i].end - address)
        return true;
    return false;
  }
};

// A bounded reader over [at, end). Every read that would leave the bounds or the object marks
// the reader failed and returns 0; callers check failed() where it matters.
class Cursor {
 public:
  Cursor(const ObjectMemory& memory, uintptr_t at, uintptr_t end)
      : memory_(&memory), at_(at), end_(end) {}

  uintptr_t at() const { return at_; }
  uintptr_t end() const { return end_; }
  bool failed() const { return failed_; }
  bool done() const { return failed_ || at_ >= end_; }
  void fail() { failed_ = true; }

  template <class T>
  T read() {
    T value{};
    if (!take(sizeof(T))) return value;
    std::memcpy(&value, reinterpret_cast<const void*>(at_ - sizeof(T)), sizeof(T));
    return value;
  }

  uint64_t uleb() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t byte = read<uint8_t>();
      if (failed_) return 0;
      value |= uint64_t(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    failed_ = true;
    return 0;
  }

  int64_t sleb() {
    int64_t value = 0;
    int shift = 0;
    uint8_t byte = 0;
    do {
      if (shift >= 64) {
        failed_ = true;
        return 0;
      }
      byte = read<uint8_t>();
      if (failed_) return 0;
      value |= int64_t(uint64_t(byte & 0x7f) << shift);
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= -(int64_t(1) << shift);
    return value;
  }

  void skip(uint64_t bytes) {
    if (bytes > end_ - at_) {
      failed_ = true;
      return;
    }
    at_ += bytes;
  }

  // A NUL-terminated string, at most `max` bytes with the NUL; nullptr when longer.
  const char* string(size_t max) {
    const uintptr_t start = at_;
    for (size_t i = 0; i < max; ++i)
      if (read<uint8_t>() == 0) return failed_ ? nullptr : reinterpret_cast<const char*>(start);
    failed_ = true;
    return nullptr;
  }

  // A pointer in `encoding`. `data_base` is the base of data-relative values (the start of
  // .eh_frame_hdr, the only place they appear). Indirect pointers are returned undereferenced:
  // only the personality routine uses them, and its value is never needed.
  uintptr_t pointer(uint8_t encoding, uintptr_t data_base = 0) {
    if (encoding == kPeOmit) return 0;
    const uintptr_t field = at_;
    uint64_t value = 0;
    switch (encoding & 0x0f) {
      case kPeAbsPtr:
        value = read<uint64_t>();
        break;
      case kPeUleb128:
        value = uleb();
        break;
      case kPeUdata2:
        value = read<uint16_t>();
        break;
      case kPeUdata4:
        value = read<uint32_t>();
        break;
      case kPeUdata8:
        value = read<uint64_t>();
        break;
      case kPeSleb128:
        value = uint64_t(sleb());
        break;
      case kPeSdata2:
        value = uint64_t(int64_t(read<int16_t>()));
        break;
      case kPeSdata4:
        value = uint64_t(int64_t(read<int32_t>()));
        break;
      case kPeSdata8:
        value = read<uint64_t>();
        break;
      default:
        failed_ = true;
        return 0;
    }
    switch (encoding & 0x70 & ~kPeIndirect) {
      case 0:
        break;
      case kPePcRel:
        value += field;
        break;
      case kPeDataRel:
        value += data_base;
        break;
      default:
        failed_ = true;
        return 0;  // text-, function-relative, aligned: not in .eh_frame
    }
    return uintptr_t(value);
  }

 private:
  bool take(uintptr_t bytes) {
    if (failed_ || bytes > end_ - at_ || !memory_->holds(at_, bytes)) {
      failed_ = true;
      return false;
    }
    at_ += bytes;
    return true;
  }

  const ObjectMemory* memory_;
  uintptr_t at_, end_;
  bool failed_ = false;
};

// A register's rule, as far as the stack walk cares.
struct RegisterRule {
  enum Kind : uint8_t { kSameValue, kUndefined, kAtCfaOffset, kOther } kind = kSameValue;
  int64_t offset = 0;
};

struct CfaState {
  uint64_t cfa_register = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_is_expression = false;
  RegisterRule rbp, return_address;
};

struct Cie {
  int64_t code_alignment = 1;
  int64_t data_alignment = -8;
  uint64_t return_address_register = kRegReturnAddress;
  uint8_t fde_pointer_encoding = kPeAbsPtr;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  uintptr_t instructions = 0, end = 0;
};

// An entry's length field; 0 when the entry is malformed or the terminator.
uintptr_t entry_length(Cursor& cursor) {
  uint64_t length = cursor.read<uint32_t>();
  if (length == 0xffffffffu) length = cursor.read<uint64_t>();
  if (cursor.failed() || length == 0 || length > (uint64_t(1) << 30)) return 0;
  return uintptr_t(length);
}

bool parse_cie(const ObjectMemory& memory, uintptr_t address, Cie* cie) {
  Cursor cursor(memory, address, UINTPTR_MAX);
  const uintptr_t length = entry_length(cursor);
  if (length == 0) return false;
  const uintptr_t end = cursor.at() + length;
  Cursor body(memory, cursor.at(), end);
  if (body.read<uint32_t>() != 0) return false;  // not a CIE
  const uint8_t version = body.read<uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* augmentation = body.string(16);
  if (augmentation == nullptr) return false;
  if (augmentation[0] != '\0' && augmentation[0] != 'z') return false;  // "eh" and others
  cie->code_alignment = int64_t(body.uleb());
  cie->data_alignment = body.sleb();
  cie->return_address_register = version == 1 ? body.read<uint8_t>() : body.uleb();
  if (augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const uint64_t data_bytes = body.uleb();
    const uintptr_t data_end = body.at() + data_bytes;
    if (body.failed() || data_bytes > body.end() - body.at()) return false;
    for (const char* c = augmentation + 1; *c != '\0'; ++c) {
      if (*c == 'R') {
        cie->fde_pointer_encoding = body.read<uint8_t>();
      } else if (*c == 'L') {
        body.read<uint8_t>();
      } else if (*c == 'P') {
        body.pointer(body.read<uint8_t>());
      } else if (*c == 'S') {
        cie->signal_frame = true;
      } else {
        // Unknown: its data cannot be skipped piecemeal, but the length covers it all, and
        // only 'R' matters after it.
        if (std::strchr(c, 'R') != nullptr) return false;
        break;
      }
    }
    if (body.failed()) return false;
    body = Cursor(memory, data_end, end);
  }
  if (body.failed() || cie->code_alignment == 0) return false;
  cie->instructions = body.at();
  cie->end = end;
  return true;
}

// Runs call frame instructions from `cursor` until the row that holds `pc` (or to the end when
// `pc` is 0, for the CIE's initial instructions). False on anything it cannot follow.
bool run_cfa_program(Cursor cursor, const Cie& cie, uintptr_t location, uintptr_t pc,
                     const CfaState& initial, CfaState* state) {
  constexpr int kMaxRemembered = 16;
  CfaState remembered[kMaxRemembered];
  int remembered_count = 0;

  auto rule_of = [&](uint64_t reg) -> RegisterRule* {
    if (reg == kRegRbp) return &state->rbp;
    if (reg == cie.return_address_register) return &state->return_address;
    return nullptr;
  };
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (RegisterRule* rule = rule_of(reg)) *rule = {RegisterRule::kAtCfaOffset, offset};
  };
  auto set_kind = [&](uint64_t reg, RegisterRule::Kind kind) {
    if (RegisterRule* rule = rule_of(reg)) *rule = {kind, 0};
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRegRbp) state->rbp = initial.rbp;
    if (reg == cie.return_address_register) state->return_address = initial.return_address;
  };
  // False when the next row starts past pc: the current row is the answer.
  auto advance = [&](uint64_t delta) {
    const uintptr_t next = location + uintptr_t(delta) * uintptr_t(cie.code_alignment);
    if (pc != 0 && next > pc) return false;
    location = next;
    return true;
  };

  while (!cursor.done()) {
    const uint8_t op = cursor.read<uint8_t>();
    const uint8_t high = op & 0xc0, low = op & 0x3f;
    if (high == 0x40) {
      if (!advance(low)) return true;
      continue;
    }
    if (high == 0x80) {
      set_offset(low, int64_t(cursor.uleb()) * cie.data_alignment);
      continue;
    }
    if (high == 0xc0) {
      restore(low);
      continue;
    }
    switch (op) {
      case 0x00:
        break;      // nop
      case 0x01: {  // set_loc
        const uintptr_t next = cursor.pointer(cie.fde_pointer_encoding);
        if (pc != 0 && next > pc) return !cursor.failed();
        location = next;
        break;
      }
      case 0x02:
        if (!advance(cursor.read<uint8_t>())) return !cursor.failed();
        break;
      case 0x03:
        if (!advance(cursor.read<uint16_t>())) return !cursor.failed();
        break;
      case 0x04:
        if (!advance(cursor.read<uint32_t>())) return !cursor.failed();
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = cursor.uleb();
        set_offset(reg, int64_t(cursor.uleb()) * cie.data_alignment);
        break;
      }
      case 0x06:
        restore(cursor.uleb());
        break;
      case 0x07:
        set_kind(cursor.uleb(), RegisterRule::kUndefined);
        break;
      case 0x08:
        set_kind(cursor.uleb(), RegisterRule::kSameValue);
        break;
      case 0x09: {  // register
        const uint64_t reg = cursor.uleb();
        cursor.uleb();
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case 0x0a:  // remember_state
        if (remembered_count == kMaxRemembered) return false;
        remembered[remembered_count++] = *state;
        break;
      case 0x0b:  // restore_state: the CFA's rule comes back too, as libgcc and libunwind do
        if (remembered_count == 0) return false;
        *state = remembered[--remembered_count];
        break;
      case 0x0c:  // def_cfa
        state->cfa_register = cursor.uleb();
        state->cfa_offset = int64_t(cursor.uleb());
        state->cfa_is_expression = false;
        break;
      case 0x0d:
        state->cfa_register = cursor.uleb();
        state->cfa_is_expression = false;
        break;
      case 0x0e:
        state->cfa_offset = int64_t(cursor.uleb());
        break;
      case 0x0f:  // def_cfa_expression
        cursor.skip(cursor.uleb());
        state->cfa_is_expression = true;
        break;
      case 0x10:    // expression
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = cursor.uleb();
        set_offset(reg, cursor.sleb() * cie.data_alignment);
        break;
      }
      case 0x12:  // def_cfa_sf
        state->cfa_register = cursor.uleb();
        state->cfa_offset = cursor.sleb() * cie.data_alignment;
        state->cfa_is_expression = false;
        break;
      case 0x13:
        state->cfa_offset = cursor.sleb() * cie.data_alignment;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = cursor.uleb();
        if (op == 0x14)
          cursor.uleb();
        else
          cursor.sleb();
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case 0x16: {  // val_expression
        const uint64_t reg = cursor.uleb();
        cursor.skip(cursor.uleb());
        set_kind(reg, RegisterRule::kOther);
        break;
      }
      case 0x2e:
        cursor.uleb();
        break;      // GNU_args_size
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = cursor.uleb();
        set_offset(reg, -int64_t(cursor.uleb()) * cie.data_alignment);
        break;
      }
      default:
        return false;
    }
  }
  return !cursor.failed();
}

FrameRule rule_from_state(const CfaState& state) {
  FrameRule rule;
  if (state.return_address.kind == RegisterRule::kUndefined) {
    rule.kind = FrameRule::Kind::kOutermost;
    return rule;
  }
  if (state.cfa_is_expression) return rule;
  if (state.return_address.kind != RegisterRule::kAtCfaOffset || state.return_address.offset != -8)
    return rule;
  if (state.cfa_offset < INT32_MIN || state.cfa_offset > INT32_MAX) return rule;
  switch (state.rbp.kind) {
    case RegisterRule::kSameValue:
      rule.rbp = FrameRule::SavedRbp::kUnchanged;
      break;
    case RegisterRule::kAtCfaOffset:
      if (state.rbp.offset < INT16_MIN || state.rbp.offset > INT16_MAX) return rule;
      rule.rbp = FrameRule::SavedRbp::kAtOffset;
      rule.rbp_offset = int16_t(state.rbp.offset);
      break;
    default:
      rule.rbp = FrameRule::SavedRbp::kUnknown;
      break;
  }
  if (state.cfa_register == kRegRsp)
    rule.kind = FrameRule::Kind::kCfaFromRsp;
  else if (state.cfa_register == kRegRbp)
    rule.kind = FrameRule::Kind::kCfaFromRbp;
  else
    return FrameRule{};
  rule.cfa_offset = int32_t(state.cfa_offset);
  return rule;
}

// The rule for `pc` from the FDE at `fde`, when it covers pc.
FrameRule rule_from_fde(const ObjectMemory& memory, uintptr_t fde, uintptr_t pc) {
  Cursor cursor(memory, fde, UINTPTR_MAX);
  const uintptr_t length = entry_length(cursor);
  if (length == 0) return {};
  const uintptr_t end = cursor.at() + length;
  Cursor body(memory, cursor.at(), end);
  const uintptr_t cie_pointer_field = body.at();
  const uint32_t cie_offset = body.read<uint32_t>();
  if (body.failed() || cie_offset == 0 || cie_offset > cie_pointer_field) return {};
  Cie cie;
  if (!parse_cie(memory, cie_pointer_field - cie_offset, &cie) || cie.signal_frame) return {};

  const uintptr_t pc_begin = body.pointer(cie.fde_pointer_encoding);
  const uintptr_t pc_range = body.pointer(cie.fde_pointer_encoding & 0x0f);
  if (body.failed() || pc < pc_begin || pc - pc_begin >= pc_range) return {};
  if (cie.has_augmentation_data) body.skip(body.uleb());
  if (body.failed()) return {};

  CfaState initial;
  initial.return_address = {RegisterRule::kSameValue, 0};
  if (!run_cfa_program(Cursor(memory, cie.instructions, cie.end), cie, 0, 0, initial, &initial))
    return {};
  CfaState state = initial;
  if (!run_cfa_program(body, cie, pc_begin, pc, initial, &state)) return {};
  return rule_from_state(state);
}

// The FDE that may cover `pc`, from .eh_frame_hdr's binary search table; 0 if there is none or
// the table is not the sorted kind every linker writes (datarel, sdata4).
uintptr_t find_fde(const ObjectMemory& memory, uintptr_t header, uintptr_t pc) {
  Cursor cursor(memory, header, UINTPTR_MAX);
  const uint8_t version = cursor.read<uint8_t>();
  const uint8_t frame_pointer_encoding = cursor.read<uint8_t>();
  const uint8_t count_encoding = cursor.read<uint8_t>();
  const uint8_t table_encoding = cursor.read<uint8_t>();
  if (cursor.failed() || version != 1 || count_encoding == kPeOmit ||
      table_encoding != (kPeDataRel | kPeSdata4))
    return 0;
  cursor.pointer(frame_pointer_encoding, header);
  const uintptr_t count = cursor.pointer(count_encoding, header);
  if (cursor.failed() || count == 0 || count > (uintptr_t(1) << 28)) return 0;
  const uintptr_t table = cursor.at();
  if (!memory.holds(table, count * 8)) return 0;

  struct Entry {
    int32_t location, fde;
  };
  const auto* entries = reinterpret_cast<const Entry*>(table);
  const intptr_t target = intptr_t(pc - header);
  uintptr_t low = 0, high = count;  // the last entry whose location <= target
  while (high - low > 1) {
    const uintptr_t middle = low + (high - low) / 2;
    if (intptr_t(entries[middle].location) <= target)
      low = middle;
    else
      high = middle;
  }
  if (intptr_t(entries[low].location) > target) return 0;
  return header + intptr_t(entries[low].fde);
}

FrameRule rule_from_header(const ObjectMemory& memory, uintptr_t header, uintptr_t pc) {
  const uintptr_t fde = find_fde(memory, header, pc);
  return fde != 0 ? rule_from_fde(memory, fde, pc) : FrameRule{};
}

struct Search {
  uintptr_t pc;
  FrameRule rule;
};

int search_object(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  ObjectMemory memory;
  bool holds_pc = false;
  uintptr_t header = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (search->pc >= begin && search->pc - begin < ph.p_memsz) holds_pc = true;
      if (memory.count < ObjectMemory::kMaxSegments)
        memory.segments[memory.count++] = {begin, begin + ph.p_memsz};
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      header = begin;
    }
  }
  if (!holds_pc) return 0;
  if (header != 0) search->rule = rule_from_header(memory, header, search->pc);
  return 1;
}

}  // namespace

FrameRule frame_rule_from_eh_frame_hdr(const ReadableRange* readable, int count,
                                       uintptr_t eh_frame_hdr, uintptr_t pc) {
  ObjectMemory memory;
  for (int i = 0; i < count && memory.count < ObjectMemory::kMaxSegments; ++i)
    memory.segments[memory.count++] = readable[i];
  return rule_from_header(memory, eh_frame_hdr, pc);
}

FrameRule find_frame_rule(uintptr_t pc) {
  // Inside dl_iterate_phdr the loader's lock is held, so the object cannot be unloaded while
  // its call frame information is read.
  Search search{pc, {}};
  dl_iterate_phdr(&search_object, &search);
  return search.rule;
}

}  // namespace vramtrace::preload
