// Frame rules read from call frame information built here byte by byte: each CFA instruction
// the walk relies on, the rules it must refuse, and malformed or out-of-bounds sections, which
// must give "unsupported" and never a read outside the readable ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "frame_rules.h"

namespace vramtrace::preload {
namespace {

using Kind = FrameRule::Kind;
using SavedRbp = FrameRule::SavedRbp;
using Bytes = std::vector<uint8_t>;

// DWARF call frame instructions.
constexpr uint8_t kAdvance = 0x40, kOffset = 0x80, kRestore = 0xc0;
constexpr uint8_t kAdvance4 = 0x04, kUndefined = 0x07, kRegister = 0x09, kRemember = 0x0a,
                  kRestoreState = 0x0b, kDefCfa = 0x0c, kDefCfaRegister = 0x0d,
                  kDefCfaOffset = 0x0e, kDefCfaExpression = 0x0f, kValOffset = 0x14;
constexpr uint8_t kRbp = 6, kRsp = 7, kR10 = 10, kReturnAddress = 16;

// An .eh_frame_hdr and its .eh_frame in one buffer, describing code that does not exist: the
// code addresses are only numbers, 1 MiB past the buffer.
class CfiImage {
 public:
  static constexpr size_t kHeaderBytes = 1024;  // .eh_frame_hdr, then .eh_frame
  static constexpr uintptr_t kCodeDistance = 1 << 20;

  CfiImage() : bytes_(64 * 1024, 0), at_(kHeaderBytes) {}

  uintptr_t base() const { return reinterpret_cast<uintptr_t>(bytes_.data()); }
  uintptr_t code(uint32_t offset) const { return base() + kCodeDistance + offset; }

  // A CIE: code alignment 1, data alignment -8, the return address in register 16 at CFA-8
  // and the CFA at %rsp+8 unless `initial` says otherwise. Returns its offset.
  size_t add_cie(const std::string& augmentation = "zR",
                 Bytes initial = {kDefCfa, kRsp, 8, kOffset | kReturnAddress, 1}) {
    Bytes body = {0, 0, 0, 0, 1};  // CIE id 0, version 1
    body.insert(body.end(), augmentation.begin(), augmentation.end());
    body.push_back(0);
    body.insert(body.end(), {1, 0x78, kReturnAddress});  // code 1, data -8, RA register
    if (!augmentation.empty() && augmentation[0] == 'z') {
      Bytes data;
      for (char c : augmentation)
        if (c == 'R') data.push_back(0x1b);  // pc-relative, signed 4 bytes
      body.push_back(uint8_t(data.size()));
      body.insert(body.end(), data.begin(), data.end());
    }
    body.insert(body.end(), initial.begin(), initial.end());
    return append_entry(body);
  }

  // An FDE of the CIE at `cie` for code [start, start + length).
  void add_fde(size_t cie, uint32_t start, uint32_t length, const Bytes& instructions) {
    const size_t entry = at_;
    Bytes body(12, 0);
    const uint32_t cie_pointer = uint32_t(entry + 4 - cie);
    std::memcpy(body.data(), &cie_pointer, 4);
    const int32_t pc_begin = int32_t(code(start) - (base() + entry + 8));
    std::memcpy(body.data() + 4, &pc_begin, 4);
    std::memcpy(body.data() + 8, &length, 4);
    body.push_back(0);  // no augmentation data
    body.insert(body.end(), instructions.begin(), instructions.end());
    append_entry(body);
    table_.push_back({int32_t(code(start) - base()), int32_t(entry)});
  }

  // Writes .eh_frame_hdr: version 1, the table sorted by code address.
  void finish(uint8_t table_encoding = 0x3b) {
    std::sort(table_.begin(), table_.end(),
              [](const Entry& a, const Entry& b) { return a.location < b.location; });
    uint8_t* out = bytes_.data();
    out[0] = 1;
    out[1] = 0x1b;  // eh_frame_ptr: pc-relative sdata4
    out[2] = 0x03;  // fde_count: udata4
    out[3] = table_encoding;
    const int32_t frame_pointer = int32_t(kHeaderBytes - 4);
    std::memcpy(out + 4, &frame_pointer, 4);
    const uint32_t count = uint32_t(table_.size());
    std::memcpy(out + 8, &count, 4);
    std::memcpy(out + 12, table_.data(), table_.size() * sizeof(Entry));
  }

  FrameRule rule_at(uint32_t offset) const { return rule_at(offset, base() + bytes_.size()); }

  // Only [base, readable_end) may be read.
  FrameRule rule_at(uint32_t offset, uintptr_t readable_end) const {
    const ReadableRange readable{base(), readable_end};
    return frame_rule_from_eh_frame_hdr(&readable, 1, base(), code(offset));
  }

  size_t end_of_entries() const { return at_; }
  uint8_t* at(size_t offset) { return bytes_.data() + offset; }

 private:
  struct Entry {
    int32_t location, fde;
  };

  size_t append_entry(const Bytes& body) {
    const size_t entry = at_;
    const uint32_t length = uint32_t(body.size());
    std::memcpy(bytes_.data() + at_, &length, 4);
    std::memcpy(bytes_.data() + at_ + 4, body.data(), body.size());
    at_ += 4 + body.size();
    return entry;
  }

  Bytes bytes_;
  size_t at_;
  std::vector<Entry> table_;
};

void expect_rule(const FrameRule& rule, Kind kind, int32_t cfa_offset, SavedRbp rbp,
                 int16_t rbp_offset = 0) {
  EXPECT_EQ(rule.kind, kind);
  EXPECT_EQ(rule.cfa_offset, cfa_offset);
  EXPECT_EQ(rule.rbp, rbp);
  if (rbp == SavedRbp::kAtOffset) {
    EXPECT_EQ(rule.rbp_offset, rbp_offset);
  }
}

// push %rbp; mov %rsp,%rbp; ... as GCC describes it.
const Bytes kFramePointerPrologue = {kAdvance | 1, kDefCfaOffset,   16,  kOffset | kRbp, 2,
                                     kAdvance | 3, kDefCfaRegister, kRbp};

TEST(FrameRules, EachRowOfAPrologueHasItsRule) {
  CfiImage image;
  const size_t cie = image.add_cie();
  image.add_fde(cie, 0x100, 0x40, kFramePointerPrologue);
  image.finish();
  expect_rule(image.rule_at(0x100), Kind::kCfaFromRsp, 8, SavedRbp::kUnchanged);
  expect_rule(image.rule_at(0x101), Kind::kCfaFromRsp, 16, SavedRbp::kAtOffset, -16);
  expect_rule(image.rule_at(0x103), Kind::kCfaFromRsp, 16, SavedRbp::kAtOffset, -16);
  expect_rule(image.rule_at(0x104), Kind::kCfaFromRbp, 16, SavedRbp::kAtOffset, -16);
  expect_rule(image.rule_at(0x13f), Kind::kCfaFromRbp, 16, SavedRbp::kAtOffset, -16);
  EXPECT_EQ(image.rule_at(0x140).kind, Kind::kUnsupported) << "past the FDE's range";
  EXPECT_EQ(image.rule_at(0xff).kind, Kind::kUnsupported) << "before every FDE";
}

TEST(FrameRules, RestoreStateBringsTheCfaBack) {
  // An epilogue in the middle of a function: remember, unwind to %rsp+8, then restore.
  CfiImage image;
  const size_t cie = image.add_cie();
  Bytes instructions = kFramePointerPrologue;
  instructions.insert(instructions.end(), {kAdvance | 8, kRemember, kDefCfa, kRsp, 8,
                                           kRestore | kRbp, kAdvance | 1, kRestoreState});
  image.add_fde(cie, 0x200, 0x20, instructions);
  image.finish();
  expect_rule(image.rule_at(0x20c), Kind::kCfaFromRsp, 8, SavedRbp::kUnchanged);
  expect_rule(image.rule_at(0x20d), Kind::kCfaFromRbp, 16, SavedRbp::kAtOffset, -16);
}

TEST(FrameRules, LongAdvancesAndLargeFramesAreFollowed) {
  CfiImage image;
  const size_t cie = image.add_cie();
  // sub $0x11170,%rsp after 0x12345 bytes: a 70,000-byte frame, two-byte uleb offset.
  image.add_fde(cie, 0x1000, 0x20000,
                {kAdvance4, 0x45, 0x23, 0x01, 0x00, kDefCfaOffset, 0xf8, 0xa2, 0x04});
  image.finish();
  expect_rule(image.rule_at(0x1000 + 0x12344), Kind::kCfaFromRsp, 8, SavedRbp::kUnchanged);
  expect_rule(image.rule_at(0x1000 + 0x12345), Kind::kCfaFromRsp, 70008, SavedRbp::kUnchanged);
}

TEST(FrameRules, AnUndefinedReturnAddressIsTheOutermostFrame) {
  CfiImage image;
  const size_t cie = image.add_cie();
  image.add_fde(cie, 0x300, 0x10, {kUndefined, kReturnAddress});
  image.finish();
  EXPECT_EQ(image.rule_at(0x305).kind, Kind::kOutermost);
}

TEST(FrameRules, RulesTheWalkCannotFollowAreRefused) {
  CfiImage image;
  const size_t cie = image.add_cie();
  image.add_fde(cie, 0x400, 0x10, {kDefCfaExpression, 2, 0x76, 0x08});  // DW_OP_breg6 8
  image.add_fde(cie, 0x500, 0x10, {kDefCfa, kR10, 0});                  // DRAP: CFA = %r10
  image.add_fde(cie, 0x600, 0x10, {kOffset | kReturnAddress, 2});       // RA at CFA-16
  image.add_fde(cie, 0x700, 0x10, {kRegister, kReturnAddress, 3});      // RA in %rbx
  const size_t signal_cie = image.add_cie("zRS");
  image.add_fde(signal_cie, 0x800, 0x10, {});
  image.finish();
  for (uint32_t code : {0x404u, 0x504u, 0x604u, 0x704u, 0x804u})
    EXPECT_EQ(image.rule_at(code).kind, Kind::kUnsupported) << std::hex << code;
}

TEST(FrameRules, ARbpTheRulesCannotGiveIsUnknownNotWrong) {
  CfiImage image;
  const size_t cie = image.add_cie();
  image.add_fde(cie, 0x900, 0x10, {kValOffset, kRbp, 2});  // %rbp = CFA-16, a value
  image.add_fde(cie, 0xa00, 0x10, {kRegister, kRbp, 3});   // %rbp in %rbx
  image.add_fde(cie, 0xb00, 0x10, {kUndefined, kRbp});     // %rbp clobbered
  image.finish();
  for (uint32_t code : {0x904u, 0xa04u, 0xb04u}) {
    SCOPED_TRACE(code);
    expect_rule(image.rule_at(code), Kind::kCfaFromRsp, 8, SavedRbp::kUnknown);
  }
}

TEST(FrameRules, TheTableFindsEachOfManyFunctions) {
  CfiImage image;
  const size_t cie = image.add_cie();
  // Added out of order; the table is sorted, each FDE's own CFA offset tells them apart.
  const uint32_t starts[] = {0x5000, 0x1000, 0x3000, 0x2000, 0x4000, 0x6000, 0x7000};
  for (uint32_t start : starts)
    image.add_fde(cie, start, 0x800, {kDefCfaOffset, uint8_t(start >> 8)});
  image.finish();
  for (uint32_t start : starts) {
    SCOPED_TRACE(start);
    expect_rule(image.rule_at(start + 0x7ff), Kind::kCfaFromRsp, int32_t(start >> 8),
                SavedRbp::kUnchanged);
    EXPECT_EQ(image.rule_at(start + 0x800).kind, Kind::kUnsupported) << "the gap after it";
  }
}

TEST(FrameRules, SectionsThatLeaveTheReadableRangesAreRefused) {
  CfiImage image;
  const size_t cie = image.add_cie();
  image.add_fde(cie, 0x100, 0x40, kFramePointerPrologue);
  image.finish();
  const uintptr_t end = image.base() + image.end_of_entries();
  expect_rule(image.rule_at(0x104, end), Kind::kCfaFromRbp, 16, SavedRbp::kAtOffset, -16);
  // The FDE's last bytes outside what may be read: refused, not read.
  EXPECT_EQ(image.rule_at(0x104, end - 1).kind, Kind::kUnsupported);
  // The header alone readable.
  EXPECT_EQ(image.rule_at(0x104, image.base() + 64).kind, Kind::kUnsupported);
}

TEST(FrameRules, MalformedSectionsAreRefused) {
  {
    CfiImage image;  // a table in an encoding linkers do not write
    const size_t cie = image.add_cie();
    image.add_fde(cie, 0x100, 0x40, kFramePointerPrologue);
    image.finish(0x1b);
    EXPECT_EQ(image.rule_at(0x104).kind, Kind::kUnsupported);
  }
  {
    CfiImage image;  // a CIE whose length runs past the buffer
    const size_t cie = image.add_cie();
    image.add_fde(cie, 0x100, 0x40, kFramePointerPrologue);
    image.finish();
    const uint32_t huge = 0x0fffffff;
    std::memcpy(image.at(cie), &huge, 4);
    EXPECT_EQ(image.rule_at(0x104).kind, Kind::kUnsupported);
  }
  {
    CfiImage image;  // restore_state with nothing remembered
    const size_t cie = image.add_cie();
    image.add_fde(cie, 0x100, 0x40, {kRestoreState});
    image.finish();
    EXPECT_EQ(image.rule_at(0x104).kind, Kind::kUnsupported);
  }
  {
    CfiImage image;  // an opcode that does not exist
    const size_t cie = image.add_cie();
    image.add_fde(cie, 0x100, 0x40, {0x3f});
    image.finish();
    EXPECT_EQ(image.rule_at(0x104).kind, Kind::kUnsupported);
  }
}

}  // namespace
}  // namespace vramtrace::preload
