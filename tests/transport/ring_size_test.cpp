// The ring size parser that `vramtrace run` and the shim share (proto/ring_size.h).
#include "ring_size.h"

#include <gtest/gtest.h>

namespace vramtrace::ring {
namespace {

TEST(RingSize, UnitsArePowersOf1024InAnyCaseWithOrWithoutB) {
  EXPECT_EQ(parse_ring_size("65536").bytes, 64u << 10);
  EXPECT_EQ(parse_ring_size("64K").bytes, 64u << 10);
  EXPECT_EQ(parse_ring_size("64k").bytes, 64u << 10);
  EXPECT_EQ(parse_ring_size("64KiB").bytes, 64u << 10);
  EXPECT_EQ(parse_ring_size("64kb").bytes, 64u << 10);
  EXPECT_EQ(parse_ring_size("8M").bytes, 8u << 20);
  EXPECT_EQ(parse_ring_size("8MiB").bytes, 8u << 20);
  EXPECT_EQ(parse_ring_size("1G").bytes, 1u << 30);
  EXPECT_EQ(parse_ring_size("1gib").bytes, 1u << 30);
  EXPECT_EQ(parse_ring_size("1048576B").bytes, 1u << 20);
  EXPECT_EQ(parse_ring_size("1G").problem, RingSizeProblem::kNone);
}

TEST(RingSize, RoundsUpToAPowerOfTwo) {
  EXPECT_EQ(parse_ring_size("100K").bytes, 128u << 10);
  EXPECT_EQ(parse_ring_size("65537").bytes, 128u << 10);
  EXPECT_EQ(parse_ring_size("600M").bytes, 1u << 30);
}

TEST(RingSize, RefusesWhatIsNotASizeRatherThanTakingAnother) {
  for (const char* text : {"abc", "-5", "+64K", " 64K", "64K ", "64 K", "64X", "64KB2", "0x100000",
                           "8.5M", "M", "64Kib!"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_ring_size(text).problem, RingSizeProblem::kNotASize);
  }
  EXPECT_EQ(parse_ring_size("").problem, RingSizeProblem::kEmpty);
  EXPECT_EQ(parse_ring_size(nullptr).problem, RingSizeProblem::kEmpty);
}

TEST(RingSize, RefusesSizesOutsideTheRingsLimits) {
  EXPECT_EQ(parse_ring_size("0").problem, RingSizeProblem::kTooSmall);
  EXPECT_EQ(parse_ring_size("1000").problem, RingSizeProblem::kTooSmall);
  EXPECT_EQ(parse_ring_size("65535").problem, RingSizeProblem::kTooSmall);
  EXPECT_EQ(parse_ring_size("63K").problem, RingSizeProblem::kTooSmall);
  EXPECT_EQ(parse_ring_size("1025M").problem, RingSizeProblem::kTooLarge);
  EXPECT_EQ(parse_ring_size("2G").problem, RingSizeProblem::kTooLarge);
  EXPECT_EQ(parse_ring_size("1T").problem, RingSizeProblem::kTooLarge);
  EXPECT_EQ(parse_ring_size("99999999999999999999999").problem, RingSizeProblem::kTooLarge);
  EXPECT_EQ(parse_ring_size("18446744073709551615").problem, RingSizeProblem::kTooLarge);
}

TEST(RingSize, TheDefaultIsARingItself) {
  EXPECT_GE(kDefaultCapacity, kMinCapacity);
  EXPECT_LE(kDefaultCapacity, kMaxCapacity);
  EXPECT_EQ(kDefaultCapacity & (kDefaultCapacity - 1), 0u);
}

}  // namespace
}  // namespace vramtrace::ring
