// The shim's C API (preload/include/vramtrace/vramtrace.h): markers and ranges with source
// API, nested per thread apart from NVTX's.
#include "vramtrace/vramtrace.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "fake_nvtx.h"
#include "test_ring.h"

namespace vramtrace::testing {
namespace {

using wire::Marker;

void expect_api_marker(const Marker& m, Marker::Type type, const std::string& name,
                       uint32_t tid = this_tid()) {
  EXPECT_EQ(m.type(), type) << m.DebugString();
  EXPECT_EQ(m.source(), Marker::SOURCE_API) << m.DebugString();
  EXPECT_EQ(m.name(), name) << m.DebugString();
  EXPECT_EQ(m.domain(), "") << m.DebugString();
  EXPECT_EQ(m.range_id(), 0u) << m.DebugString();
  EXPECT_EQ(m.color(), 0u) << m.DebugString();
  EXPECT_EQ(m.category(), 0u) << m.DebugString();
  EXPECT_EQ(m.tid(), tid) << m.DebugString();
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override { ring.drain(); }
  TestRing& ring = TestRing::get();
};

TEST_F(CApi, SaysWhetherItRecords) {
  EXPECT_EQ(vramtrace_is_recording(), 1);
  ShimStateScope off(preload::ShimState::kOff);
  EXPECT_EQ(vramtrace_is_recording(), 0);
}

TEST_F(CApi, MarksAndNestedRanges) {
  vramtrace_mark("start");
  EXPECT_EQ(vramtrace_range_push("epoch"), 0);
  EXPECT_EQ(vramtrace_range_push("step"), 1);
  vramtrace_mark(nullptr);
  EXPECT_EQ(vramtrace_range_pop(), 1);
  EXPECT_EQ(vramtrace_range_pop(), 0);
  EXPECT_EQ(vramtrace_range_pop(), -1);  // nothing open: nothing recorded

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 6u);
  expect_api_marker(m[0], Marker::TYPE_MARK, "start");
  expect_api_marker(m[1], Marker::TYPE_RANGE_PUSH, "epoch");
  expect_api_marker(m[2], Marker::TYPE_RANGE_PUSH, "step");
  expect_api_marker(m[3], Marker::TYPE_MARK, "");
  expect_api_marker(m[4], Marker::TYPE_RANGE_POP, "");
  expect_api_marker(m[5], Marker::TYPE_RANGE_POP, "");
}

// The API's ranges and NVTX's default domain are two nestings: a pop of one never closes a
// range of the other.
TEST_F(CApi, NestsApartFromNvtx) {
  FakeNvtx nvtx;
  ASSERT_EQ(nvtx.initialize(), 1);
  EXPECT_EQ(vramtrace_range_push("api"), 0);
  EXPECT_EQ(nvtx.RangePushA("nvtx"), 0);
  EXPECT_EQ(vramtrace_range_pop(), 0);
  EXPECT_EQ(vramtrace_range_pop(), -1);
  EXPECT_EQ(nvtx.RangePop(), 0);
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].source(), Marker::SOURCE_API);
  EXPECT_EQ(m[1].source(), Marker::SOURCE_NVTX);
  EXPECT_EQ(m[2].source(), Marker::SOURCE_API);
  EXPECT_EQ(m[3].source(), Marker::SOURCE_NVTX);
}

TEST_F(CApi, NothingIsRecordedWhenNotRecordingButLevelsStayRight) {
  {
    ShimStateScope off(preload::ShimState::kOff);
    vramtrace_mark("unseen");
    EXPECT_EQ(vramtrace_range_push("unseen"), 0);
    EXPECT_EQ(vramtrace_range_pop(), 0);
  }
  EXPECT_TRUE(ring.drain_markers().empty());
}

TEST_F(CApi, NamesAreValidUtf8) {
  vramtrace_mark("ok ✓ \xc0\x80 \xed\xa0\x80");  // an overlong NUL and a UTF-16 surrogate
  std::thread([] { vramtrace_mark("from a thread"); }).join();
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 2u);
  expect_api_marker(m[0], Marker::TYPE_MARK, "ok ✓ \uFFFD\uFFFD \uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(m[1].name(), "from a thread");
  EXPECT_NE(m[1].tid(), this_tid());
}

}  // namespace
}  // namespace vramtrace::testing
