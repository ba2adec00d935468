// The shim under NVTX's real loader: this program is built with the CUDA toolkit's NVTX 3
// headers, which attach the shim through their static injection hook (static_injection.cpp)
// at the first NVTX call, exactly as they attach a dlopened NVTX_INJECTION64_PATH library.
// Every call below goes through the tables the shim filled in NVTX's own globals.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvtx3.hpp>

#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>
#include <vector>

#include "test_ring.h"

namespace vramtrace::testing {
namespace {

using wire::Marker;

std::string describe(const Marker& m) {
  return m.DebugString();
}

class RealNvtx : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The dynamic injection comes first in NVTX's search: make sure none is asked for, and
    // that the shim records before NVTX's first call attaches it.
    unsetenv("NVTX_INJECTION64_PATH");
    TestRing::get();
  }
  void SetUp() override { ring.drain(); }
  TestRing& ring = TestRing::get();
};

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

TEST_F(RealNvtx, MarksRangesAndLevels) {
  nvtxMarkA("first call attaches the shim");
  nvtxEventAttributes_t a = attributes();
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xff102030;
  a.category = 5;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "epoch";
  EXPECT_EQ(nvtxRangePushEx(&a), 0);
  EXPECT_EQ(nvtxRangePushW(L"wide ✓"), 1);
  EXPECT_EQ(nvtxRangePushA("inner"), 2);
  EXPECT_EQ(nvtxRangePop(), 2);
  EXPECT_EQ(nvtxRangePop(), 1);
  EXPECT_EQ(nvtxRangePop(), 0);
  EXPECT_LT(nvtxRangePop(), 0);
  // Calls the shim leaves to NVTX: no-ops, nothing recorded.
  nvtxNameOsThreadA(this_tid(), "main");
  nvtxNameCategoryA(5, "phase");

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].type(), Marker::TYPE_MARK) << describe(m[0]);
  EXPECT_EQ(m[0].name(), "first call attaches the shim");
  EXPECT_EQ(m[0].source(), Marker::SOURCE_NVTX);
  EXPECT_EQ(m[0].tid(), this_tid());
  EXPECT_EQ(m[1].type(), Marker::TYPE_RANGE_PUSH) << describe(m[1]);
  EXPECT_EQ(m[1].name(), "epoch");
  EXPECT_EQ(m[1].color(), 0xff102030u);
  EXPECT_EQ(m[1].category(), 5u);
  EXPECT_EQ(m[2].name(), "wide ✓");
  EXPECT_EQ(m[3].name(), "inner");
  for (size_t i = 4; i < 7; ++i) EXPECT_EQ(m[i].type(), Marker::TYPE_RANGE_POP) << describe(m[i]);
}

TEST_F(RealNvtx, StartEndAcrossThreads) {
  const nvtxRangeId_t id = nvtxRangeStartA("load");
  uint32_t worker = 0;
  std::thread([&] {
    worker = this_tid();
    nvtxRangeEnd(id);
  }).join();
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].type(), Marker::TYPE_RANGE_START);
  EXPECT_EQ(m[0].name(), "load");
  EXPECT_EQ(m[0].range_id(), id);
  EXPECT_EQ(m[0].tid(), this_tid());
  EXPECT_EQ(m[1].type(), Marker::TYPE_RANGE_END);
  EXPECT_EQ(m[1].range_id(), id);
  EXPECT_EQ(m[1].tid(), worker);
}

TEST_F(RealNvtx, DomainsAndRegisteredStrings) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("real.io");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "io-step");
  nvtxEventAttributes_t a = attributes();
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xff3366cc;
  a.category = 2;
  EXPECT_EQ(nvtxDomainRangePushEx(d, &a), 0);
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = L"io-mark ✓";
  nvtxDomainMarkEx(d, &a);
  EXPECT_EQ(nvtxDomainRangePop(d), 0);
  const nvtxRangeId_t id = nvtxDomainRangeStartEx(d, &a);
  nvtxDomainRangeEnd(d, id);
  nvtxDomainDestroy(d);  // left to NVTX: the handle stays valid

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 5u);
  for (const auto& marker : m) EXPECT_EQ(marker.domain(), "real.io") << describe(marker);
  EXPECT_EQ(m[0].type(), Marker::TYPE_RANGE_PUSH);
  EXPECT_EQ(m[0].name(), "io-step");
  EXPECT_EQ(m[0].color(), 0xff3366ccu);
  EXPECT_EQ(m[0].category(), 2u);
  EXPECT_EQ(m[1].type(), Marker::TYPE_MARK);
  EXPECT_EQ(m[1].name(), "io-mark ✓");
  EXPECT_EQ(m[2].type(), Marker::TYPE_RANGE_POP);
  EXPECT_EQ(m[3].type(), Marker::TYPE_RANGE_START);
  EXPECT_EQ(m[3].range_id(), id);
  EXPECT_EQ(m[4].type(), Marker::TYPE_RANGE_END);
  EXPECT_EQ(m[4].range_id(), id);
}

// NVTX's C++ API (nvtx3.hpp), as C++ code uses it: registered strings and domains made from
// types, ranges tied to scopes.
struct cpp_domain {
  static constexpr const char* name{"real.cpp"};
};
struct step_message {
  static constexpr const char* message{"step"};
};

TEST_F(RealNvtx, CppApi) {
  {
    nvtx3::scoped_range outer{"outer"};
    auto& step = nvtx3::registered_string_in<cpp_domain>::get<step_message>();
    nvtx3::scoped_range_in<cpp_domain> inner{step, nvtx3::rgb{255, 0, 0}};
    nvtx3::mark_in<cpp_domain>("tick");
  }
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].type(), Marker::TYPE_RANGE_PUSH);
  EXPECT_EQ(m[0].name(), "outer");
  EXPECT_EQ(m[0].domain(), "");
  EXPECT_EQ(m[1].type(), Marker::TYPE_RANGE_PUSH);
  EXPECT_EQ(m[1].name(), "step");
  EXPECT_EQ(m[1].domain(), "real.cpp");
  EXPECT_EQ(m[1].color(), 0xffff0000u);
  EXPECT_EQ(m[2].type(), Marker::TYPE_MARK);
  EXPECT_EQ(m[2].name(), "tick");
  EXPECT_EQ(m[2].domain(), "real.cpp");
  EXPECT_EQ(m[3].type(), Marker::TYPE_RANGE_POP);
  EXPECT_EQ(m[3].domain(), "real.cpp");
  EXPECT_EQ(m[4].type(), Marker::TYPE_RANGE_POP);
  EXPECT_EQ(m[4].domain(), "");
}

}  // namespace
}  // namespace vramtrace::testing
