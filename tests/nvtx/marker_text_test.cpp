// MarkerText: any text in, bounded valid UTF-8 out.
#include "marker_text.h"

#include <gtest/gtest.h>

#include <string>

namespace vramtrace::preload {
namespace {

std::string narrow(const char* s) {
  MarkerText t;
  t.assign(s);
  EXPECT_EQ(std::string(t.c_str()).size(), t.size());
  return t.c_str();
}

std::string wide(const wchar_t* s) {
  MarkerText t;
  t.assign(s);
  EXPECT_EQ(std::string(t.c_str()).size(), t.size());
  return t.c_str();
}

constexpr size_t kMaxBytes = MarkerText::kCapacity - 1;

TEST(MarkerText, ValidUtf8IsKeptAsItIs) {
  EXPECT_EQ(narrow(nullptr), "");
  EXPECT_EQ(narrow(""), "");
  EXPECT_EQ(narrow("forward"), "forward");
  EXPECT_EQ(narrow("é ✓ 日本 🚀 \U0010FFFF"), "é ✓ 日本 🚀 \U0010FFFF");
}

TEST(MarkerText, EachBadByteBecomesOneReplacementCharacter) {
  const std::string r = "\uFFFD";
  EXPECT_EQ(narrow("caf\xe9"), "caf" + r);                              // Latin-1
  EXPECT_EQ(narrow("\x80\xbf"), r + r);                                 // lone continuations
  EXPECT_EQ(narrow("\xc0\xaf"), r + r);                                 // overlong '/'
  EXPECT_EQ(narrow("\xe0\x80\xaf"), r + r + r);                         // overlong, 3 bytes
  EXPECT_EQ(narrow("\xf0\x80\x80\xaf"), r + r + r + r);                 // overlong, 4 bytes
  EXPECT_EQ(narrow("\xed\xa0\x80"), r + r + r);                         // surrogate D800
  EXPECT_EQ(narrow("\xf4\x90\x80\x80"), r + r + r + r);                 // above U+10FFFF
  EXPECT_EQ(narrow("\xf5\xff"), r + r);                                 // never valid
  EXPECT_EQ(narrow("end \xe6\x97"), "end " + r + r);                    // cut short by the NUL
  EXPECT_EQ(narrow("\xe6\x97x\xe6\x97\xa5"), r + r + "x\xe6\x97\xa5");  // then resynchronised
}

TEST(MarkerText, WideTextIsEncoded) {
  EXPECT_EQ(wide(nullptr), "");
  EXPECT_EQ(wide(L"wide ünïcødé 日本 🚀"), "wide ünïcødé 日本 🚀");
  const wchar_t bad[] = {L'a',
                         static_cast<wchar_t>(0xd800),
                         static_cast<wchar_t>(0x110000),
                         static_cast<wchar_t>(-1),
                         L'b',
                         0};
  EXPECT_EQ(wide(bad), "a\uFFFD\uFFFD\uFFFDb");
}

// Cut at the last whole character that fits in 255 bytes, for each sequence length.
TEST(MarkerText, LongTextIsCutOnACharacterBoundary) {
  for (const std::string unit : {"a", "é", "✓", "🚀"}) {
    std::string in;
    while (in.size() < 400) in += unit;
    const std::string out = narrow(in.c_str());
    EXPECT_EQ(out, in.substr(0, kMaxBytes / unit.size() * unit.size())) << unit;
    std::wstring win;
    for (size_t i = 0; i < in.size() / unit.size(); ++i)
      win += unit == "a" ? L"a" : unit == "é" ? L"é" : unit == "✓" ? L"✓" : L"🚀";
    EXPECT_EQ(wide(win.c_str()), out) << unit;
  }
  // A replacement character that does not fit is not written either.
  std::string in(kMaxBytes - 1, 'x');
  in += "\xff";
  EXPECT_EQ(narrow(in.c_str()), std::string(kMaxBytes - 1, 'x'));
}

TEST(MarkerText, ConstantsNeedNoConstructorToRun) {
  static constinit MarkerText constant = MarkerText::constant("overflow");
  EXPECT_STREQ(constant.c_str(), "overflow");
  EXPECT_EQ(constant.size(), 8u);
}

}  // namespace
}  // namespace vramtrace::preload
