// The shim as an NVTX injection library: the entry point called as NVTX's loader calls it,
// then NVTX's calls made through the function tables it filled, each read back from the
// ring and decoded with libprotobuf, every field checked.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_nvtx.h"
#include "reentry_guard.h"
#include "test_ring.h"

namespace vramtrace::testing {
namespace {

using wire::Marker;

struct Expected {
  Marker::Type type;
  std::string domain;
  std::string name;
  uint64_t range_id = 0;
  uint32_t color = 0;
  uint32_t category = 0;
  uint32_t tid = this_tid();
  Marker::Source source = Marker::SOURCE_NVTX;
};

void expect_marker(const Marker& m, const Expected& e) {
  EXPECT_EQ(m.type(), e.type) << m.DebugString();
  EXPECT_EQ(m.source(), e.source) << m.DebugString();
  EXPECT_EQ(m.domain(), e.domain) << m.DebugString();
  EXPECT_EQ(m.name(), e.name) << m.DebugString();
  EXPECT_EQ(m.range_id(), e.range_id) << m.DebugString();
  EXPECT_EQ(m.color(), e.color) << m.DebugString();
  EXPECT_EQ(m.category(), e.category) << m.DebugString();
  EXPECT_EQ(m.tid(), e.tid) << m.DebugString();
}

nvtx::EventAttributes attributes(const char* message) {
  nvtx::EventAttributes a{};
  a.version = 3;
  a.size = sizeof(nvtx::EventAttributes);
  a.messageType = nvtx::kMessageAscii;
  a.message.ascii = message;
  return a;
}

class NvtxInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    ring.drain();
    ASSERT_EQ(nvtx.initialize(), 1);
  }

  TestRing& ring = TestRing::get();
  FakeNvtx nvtx;
};

TEST_F(NvtxInjection, FillsExactlyTheCallsItImplements) {
  const std::set<unsigned> core = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::set<unsigned> core2 = {1, 2, 3, 4, 5, 10, 11, 12, 13};
  for (unsigned id = 1; id < FakeNvtx::kCoreIds; ++id)
    EXPECT_EQ(nvtx.installed(nvtx::kModuleCore, id), core.count(id) == 1) << "core id " << id;
  for (unsigned id = 1; id < FakeNvtx::kCore2Ids; ++id)
    EXPECT_EQ(nvtx.installed(nvtx::kModuleCore2, id), core2.count(id) == 1) << "core2 id " << id;
}

TEST(NvtxInjectionEntry, WritesNothingPastAnOlderNvtxsTables) {
  TestRing::get();
  FakeNvtx old_nvtx(/*core_ids=*/8, /*core2_ids=*/0);  // ids 1..7, and no domains
  ASSERT_EQ(old_nvtx.initialize(), 1);
  for (unsigned id = 1; id < FakeNvtx::kCoreIds; ++id)
    EXPECT_EQ(old_nvtx.installed(nvtx::kModuleCore, id), id < 8) << "core id " << id;
  for (unsigned id = 1; id < FakeNvtx::kCore2Ids; ++id)
    EXPECT_FALSE(old_nvtx.installed(nvtx::kModuleCore2, id)) << "core2 id " << id;
}

// A process that will never record gets NVTX's no-op calls, exactly as without a tool.
TEST(NvtxInjectionEntry, DeclinesWhenTheShimDoesNotRecord) {
  TestRing::get();
  for (auto state : {preload::ShimState::kOff, preload::ShimState::kStopped}) {
    ShimStateScope scope(state);
    FakeNvtx idle;
    EXPECT_EQ(idle.initialize(), 0);
    for (unsigned id = 1; id < FakeNvtx::kCoreIds; ++id)
      EXPECT_FALSE(idle.installed(nvtx::kModuleCore, id));
  }
  EXPECT_EQ(InitializeInjectionNvtx2(nullptr), 0);
}

TEST_F(NvtxInjection, MarksCarryTheirMessageColorAndCategory) {
  nvtx.MarkA("plain");
  nvtx::EventAttributes a = attributes("colored");
  a.colorType = nvtx::kColorArgb;
  a.color = 0xff00ff80;
  a.category = 7;
  nvtx.MarkEx(&a);
  // A color whose type is not ARGB is no color.
  nvtx::EventAttributes b = attributes("uncolored");
  b.colorType = nvtx::kColorUnknown;
  b.color = 0xff00ff80;
  nvtx.MarkEx(&b);
  nvtx.MarkW(L"wide ünïcødé 日本 🚀");
  nvtx::EventAttributes w{};
  w.size = sizeof w;
  w.messageType = nvtx::kMessageUnicode;
  w.message.unicode = L"Ex wide ✓";
  w.category = 0xffffffff;
  nvtx.MarkEx(&w);
  nvtx.MarkEx(nullptr);

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 6u);
  expect_marker(m[0], {.type = Marker::TYPE_MARK, .name = "plain"});
  expect_marker(m[1],
                {.type = Marker::TYPE_MARK, .name = "colored", .color = 0xff00ff80, .category = 7});
  expect_marker(m[2], {.type = Marker::TYPE_MARK, .name = "uncolored"});
  expect_marker(m[3], {.type = Marker::TYPE_MARK, .name = "wide ünïcødé 日本 🚀"});
  expect_marker(m[4], {.type = Marker::TYPE_MARK, .name = "Ex wide ✓", .category = 0xffffffff});
  expect_marker(m[5], {.type = Marker::TYPE_MARK});
}

// Fields past the caller's `size` are not read: an older NVTX's attributes may end earlier.
TEST_F(NvtxInjection, ReadsOnlyWhatTheAttributesSizeCovers) {
  nvtx::EventAttributes a = attributes("beyond the size");
  a.colorType = nvtx::kColorArgb;
  a.color = 0x12345678;
  a.category = 3;
  a.size = offsetof(nvtx::EventAttributes, message);
  nvtx.MarkEx(&a);
  a.size = offsetof(nvtx::EventAttributes, colorType);  // category only
  nvtx.MarkEx(&a);

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 2u);
  expect_marker(m[0], {.type = Marker::TYPE_MARK, .color = 0x12345678, .category = 3});
  expect_marker(m[1], {.type = Marker::TYPE_MARK, .category = 3});
}

TEST_F(NvtxInjection, PushAndPopNestAndReturnNvtxLevels) {
  EXPECT_EQ(nvtx.RangePushA("outer"), 0);
  nvtx::EventAttributes a = attributes("middle");
  a.colorType = nvtx::kColorArgb;
  a.color = 0xffabcdef;
  a.category = 2;
  EXPECT_EQ(nvtx.RangePushEx(&a), 1);
  EXPECT_EQ(nvtx.RangePushW(L"inner ✓"), 2);
  EXPECT_EQ(nvtx.RangePop(), 2);
  EXPECT_EQ(nvtx.RangePop(), 1);
  EXPECT_EQ(nvtx.RangePop(), 0);
  EXPECT_LT(nvtx.RangePop(), 0);  // nothing open: NVTX's error, and nothing recorded

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 6u);
  expect_marker(m[0], {.type = Marker::TYPE_RANGE_PUSH, .name = "outer"});
  expect_marker(
      m[1],
      {.type = Marker::TYPE_RANGE_PUSH, .name = "middle", .color = 0xffabcdef, .category = 2});
  expect_marker(m[2], {.type = Marker::TYPE_RANGE_PUSH, .name = "inner ✓"});
  for (size_t i = 3; i < 6; ++i) expect_marker(m[i], {.type = Marker::TYPE_RANGE_POP});
}

TEST_F(NvtxInjection, EachThreadNestsOnItsOwn) {
  EXPECT_EQ(nvtx.RangePushA("main"), 0);
  int other_levels[3] = {};
  std::thread([&] {
    other_levels[0] = nvtx.RangePushA("worker");
    other_levels[1] = nvtx.RangePop();
    other_levels[2] = nvtx.RangePop();
  }).join();
  EXPECT_EQ(other_levels[0], 0);
  EXPECT_EQ(other_levels[1], 0);
  EXPECT_LT(other_levels[2], 0);  // the main thread's range is not the worker's to pop
  EXPECT_EQ(nvtx.RangePop(), 0);
  EXPECT_EQ(ring.drain_markers().size(), 4u);
}

TEST_F(NvtxInjection, StartAndEndPairAcrossThreadsByUniqueIds) {
  nvtx::EventAttributes a = attributes("load");
  a.colorType = nvtx::kColorArgb;
  a.color = 0x80112233;
  a.category = 9;
  const nvtx::RangeId load = nvtx.RangeStartEx(&a);
  const nvtx::RangeId narrow = nvtx.RangeStartA("narrow");
  const nvtx::RangeId wide = nvtx.RangeStartW(L"wïde");
  EXPECT_NE(load, 0u);
  EXPECT_EQ(std::set<nvtx::RangeId>({load, narrow, wide}).size(), 3u);
  uint32_t worker_tid = 0;
  std::thread([&] {
    worker_tid = this_tid();
    nvtx.RangeEnd(load);
  }).join();
  nvtx.RangeEnd(wide);
  nvtx.RangeEnd(narrow);

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 6u);
  expect_marker(m[0], {.type = Marker::TYPE_RANGE_START,
                       .name = "load",
                       .range_id = load,
                       .color = 0x80112233,
                       .category = 9});
  expect_marker(m[1], {.type = Marker::TYPE_RANGE_START, .name = "narrow", .range_id = narrow});
  expect_marker(m[2], {.type = Marker::TYPE_RANGE_START, .name = "wïde", .range_id = wide});
  expect_marker(m[3], {.type = Marker::TYPE_RANGE_END, .range_id = load, .tid = worker_tid});
  expect_marker(m[4], {.type = Marker::TYPE_RANGE_END, .range_id = wide});
  expect_marker(m[5], {.type = Marker::TYPE_RANGE_END, .range_id = narrow});
  EXPECT_NE(worker_tid, this_tid());
}

TEST_F(NvtxInjection, DomainsNameTheirEventsAndNestApart) {
  nvtx::DomainHandle io = nvtx.DomainCreateA("test.io");
  ASSERT_NE(io, nullptr);
  EXPECT_EQ(nvtx.DomainCreateA("test.io"), io);  // one handle per name
  nvtx::DomainHandle wide = nvtx.DomainCreateW(L"tëst.wide");
  EXPECT_NE(wide, io);
  EXPECT_EQ(nvtx.DomainCreateA("tëst.wide"), wide);  // the same name, however it was spelt

  nvtx::EventAttributes a = attributes("read");
  a.colorType = nvtx::kColorArgb;
  a.color = 0xff0000ff;
  a.category = 4;
  nvtx.DomainMarkEx(io, &a);
  nvtx.DomainMarkEx(nullptr, &a);  // the null handle is NVTX's default domain
  EXPECT_EQ(nvtx.RangePushA("default"), 0);
  EXPECT_EQ(nvtx.DomainRangePushEx(io, &a), 0);  // a level per domain
  EXPECT_EQ(nvtx.DomainRangePushEx(io, &a), 1);
  EXPECT_EQ(nvtx.DomainRangePushEx(wide, &a), 0);
  EXPECT_EQ(nvtx.DomainRangePop(io), 1);
  EXPECT_EQ(nvtx.RangePop(), 0);
  EXPECT_EQ(nvtx.DomainRangePop(io), 0);
  EXPECT_LT(nvtx.DomainRangePop(io), 0);
  EXPECT_EQ(nvtx.DomainRangePop(wide), 0);
  const nvtx::RangeId id = nvtx.DomainRangeStartEx(io, &a);
  nvtx.DomainRangeEnd(io, id);

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 12u);
  const Expected read{.type = Marker::TYPE_MARK,
                      .domain = "test.io",
                      .name = "read",
                      .color = 0xff0000ff,
                      .category = 4};
  expect_marker(m[0], read);
  Expected default_read = read;
  default_read.domain = "";
  expect_marker(m[1], default_read);
  expect_marker(m[2], {.type = Marker::TYPE_RANGE_PUSH, .name = "default"});
  Expected push = read;
  push.type = Marker::TYPE_RANGE_PUSH;
  expect_marker(m[3], push);
  expect_marker(m[4], push);
  push.domain = "tëst.wide";
  expect_marker(m[5], push);
  expect_marker(m[6], {.type = Marker::TYPE_RANGE_POP, .domain = "test.io"});
  expect_marker(m[7], {.type = Marker::TYPE_RANGE_POP});
  expect_marker(m[8], {.type = Marker::TYPE_RANGE_POP, .domain = "test.io"});
  expect_marker(m[9], {.type = Marker::TYPE_RANGE_POP, .domain = "tëst.wide"});
  Expected start = read;
  start.type = Marker::TYPE_RANGE_START;
  start.range_id = id;
  expect_marker(m[10], start);
  expect_marker(m[11], {.type = Marker::TYPE_RANGE_END, .domain = "test.io", .range_id = id});
}

TEST_F(NvtxInjection, RegisteredStringsResolveToTheirText) {
  nvtx::DomainHandle d = nvtx.DomainCreateA("test.strings");
  nvtx::StringHandle step = nvtx.DomainRegisterStringA(d, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(nvtx.DomainRegisterStringA(d, "step"), step);  // once per (domain, text)
  EXPECT_NE(nvtx.DomainRegisterStringA(nullptr, "step"), step);
  nvtx::StringHandle wide = nvtx.DomainRegisterStringW(d, L"schritt ✓");

  nvtx::EventAttributes a{};
  a.size = sizeof a;
  a.messageType = nvtx::kMessageRegistered;
  a.message.registered = step;
  a.colorType = nvtx::kColorArgb;
  a.color = 0xff3366cc;
  a.category = 2;
  EXPECT_EQ(nvtx.DomainRangePushEx(d, &a), 0);
  a.message.registered = wide;
  nvtx.DomainMarkEx(d, &a);
  // A handle the shim never gave out is not dereferenced: the name is empty.
  char foreign[64] = "not a registration";
  a.message.registered = reinterpret_cast<nvtx::StringHandle>(foreign);
  nvtx.DomainMarkEx(d, &a);
  EXPECT_EQ(nvtx.DomainRangePop(d), 0);

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 4u);
  expect_marker(m[0], {.type = Marker::TYPE_RANGE_PUSH,
                       .domain = "test.strings",
                       .name = "step",
                       .color = 0xff3366cc,
                       .category = 2});
  expect_marker(m[1], {.type = Marker::TYPE_MARK,
                       .domain = "test.strings",
                       .name = "schritt ✓",
                       .color = 0xff3366cc,
                       .category = 2});
  expect_marker(
      m[2],
      {.type = Marker::TYPE_MARK, .domain = "test.strings", .color = 0xff3366cc, .category = 2});
  expect_marker(m[3], {.type = Marker::TYPE_RANGE_POP, .domain = "test.strings"});
}

// A domain handle the shim never gave out is read as the "overflow" domain, not followed.
TEST_F(NvtxInjection, ForeignDomainHandlesAreNotDereferenced) {
  char foreign[512] = "not a domain";
  nvtx.DomainMarkEx(reinterpret_cast<nvtx::DomainHandle>(foreign), nullptr);
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 1u);
  expect_marker(m[0], {.type = Marker::TYPE_MARK, .domain = "overflow"});
}

// The wire's strings must be valid UTF-8, or libprotobuf drops the whole record; and names
// are bounded (marker_text_test.cpp has the details).
TEST_F(NvtxInjection, NamesAreValidUtf8AndBounded) {
  nvtx.MarkA("latin-1 caf\xe9 \xff");
  std::string long_name;
  for (int i = 0; i < 300; ++i) long_name += "é";
  nvtx.MarkA(long_name.c_str());

  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name(), "latin-1 caf\uFFFD \uFFFD");
  EXPECT_EQ(m[1].name(), long_name.substr(0, 254));  // 127 of them: a 128th would need 256
}

TEST_F(NvtxInjection, NothingIsRecordedWhenNotRecordingButLevelsStayRight) {
  {
    ShimStateScope stopped(preload::ShimState::kStopped);
    nvtx.MarkA("unseen");
    EXPECT_EQ(nvtx.RangePushA("unseen"), 0);
    EXPECT_NE(nvtx.RangeStartA("unseen"), 0u);
    EXPECT_EQ(nvtx.RangePop(), 0);
    nvtx::DomainHandle d = nvtx.DomainCreateA("test.unseen");
    EXPECT_NE(d, nullptr);
    EXPECT_NE(nvtx.DomainRegisterStringA(d, "unseen"), nullptr);
  }
  EXPECT_TRUE(ring.drain_markers().empty());
}

// A call made while this thread is already inside the shim (a signal handler that
// interrupted a hook) passes through: the ring's lock may be held by this very thread.
TEST_F(NvtxInjection, NothingIsRecordedFromInsideTheShim) {
  {
    preload::ReentryGuard inside;
    nvtx.MarkA("nested");
    EXPECT_EQ(nvtx.RangePushA("nested"), 0);
    EXPECT_EQ(nvtx.RangePop(), 0);
  }
  nvtx.MarkA("outside");
  auto m = ring.drain_markers();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name(), "outside");
}

// A thread can have ranges open in 14 domains at once; a 15th is not tracked (NVTX's error
// level, nothing recorded) until one of the 14 closes.
TEST_F(NvtxInjection, OpenRangesInTooManyDomainsAreNotTracked) {
  std::vector<nvtx::DomainHandle> d;
  for (int i = 0; i < 15; ++i)
    d.push_back(nvtx.DomainCreateA(("open." + std::to_string(i)).c_str()));
  ring.drain();
  for (int i = 0; i < 14; ++i)
    EXPECT_EQ(nvtx.DomainRangePushEx(d[static_cast<size_t>(i)], nullptr), 0);
  EXPECT_LT(nvtx.DomainRangePushEx(d[14], nullptr), 0);
  EXPECT_LT(nvtx.DomainRangePop(d[14]), 0);
  EXPECT_EQ(nvtx.RangePushA("default domain is apart"), 0);
  EXPECT_EQ(nvtx.RangePop(), 0);
  EXPECT_EQ(nvtx.DomainRangePop(d[3]), 0);
  EXPECT_EQ(nvtx.DomainRangePushEx(d[14], nullptr), 0);  // a slot was freed
  EXPECT_EQ(nvtx.DomainRangePop(d[14]), 0);
  for (int i = 0; i < 14; ++i) {
    if (i == 3) continue;  // popped above
    EXPECT_EQ(nvtx.DomainRangePop(d[static_cast<size_t>(i)]), 0);
  }
  size_t markers = 0;
  for (const auto& env : ring.drain()) markers += env.body_case() == wire::Envelope::kMarker;
  EXPECT_EQ(markers, 14u + 2u + 2u + 14u);
}

TEST_F(NvtxInjection, ManyThreadsAtOnce) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 500;
  nvtx::DomainHandle d = nvtx.DomainCreateA("test.threads");
  std::vector<std::thread> threads;
  constexpr int kStrings = 50;  // registered by every thread at once: one handle each
  std::vector<uint32_t> tids(kThreads);
  std::vector<std::vector<nvtx::StringHandle>> handles(kThreads);
  std::atomic<int> bad_levels{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[static_cast<size_t>(t)] = this_tid();
      for (int i = 0; i < kRounds; ++i) {
        const std::string name = "t" + std::to_string(t) + "." + std::to_string(i);
        if (nvtx.RangePushA(name.c_str()) != 0) ++bad_levels;
        if (nvtx.DomainRangePushEx(d, nullptr) != 0) ++bad_levels;
        if (i < kStrings)
          handles[static_cast<size_t>(t)].push_back(
              nvtx.DomainRegisterStringA(d, ("shared." + std::to_string(i)).c_str()));
        nvtx.MarkA(name.c_str());
        if (nvtx.DomainRangePop(d) != 0) ++bad_levels;
        if (nvtx.RangePop() != 0) ++bad_levels;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad_levels.load(), 0);
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(handles[static_cast<size_t>(t)], handles[0]);
  EXPECT_EQ(std::set<nvtx::StringHandle>(handles[0].begin(), handles[0].end()).size(),
            static_cast<size_t>(kStrings));

  // Per thread, in order: push, domain push, mark, domain pop, pop, with the thread's names.
  std::map<uint32_t, std::vector<Marker>> by_tid;
  for (auto& m : ring.drain_markers()) by_tid[m.tid()].push_back(m);
  ASSERT_EQ(by_tid.size(), static_cast<size_t>(kThreads));
  for (int t = 0; t < kThreads; ++t) {
    const auto& seq = by_tid[tids[static_cast<size_t>(t)]];
    ASSERT_EQ(seq.size(), static_cast<size_t>(5 * kRounds));
    for (int i = 0; i < kRounds; ++i) {
      const std::string name = "t" + std::to_string(t) + "." + std::to_string(i);
      const Marker* m = &seq[static_cast<size_t>(5 * i)];
      EXPECT_EQ(m[0].type(), Marker::TYPE_RANGE_PUSH);
      EXPECT_EQ(m[0].name(), name);
      EXPECT_EQ(m[1].type(), Marker::TYPE_RANGE_PUSH);
      EXPECT_EQ(m[1].domain(), "test.threads");
      EXPECT_EQ(m[2].type(), Marker::TYPE_MARK);
      EXPECT_EQ(m[2].name(), name);
      EXPECT_EQ(m[3].type(), Marker::TYPE_RANGE_POP);
      EXPECT_EQ(m[3].domain(), "test.threads");
      EXPECT_EQ(m[4].type(), Marker::TYPE_RANGE_POP);
      EXPECT_EQ(m[4].domain(), "");
    }
  }
}

}  // namespace
}  // namespace vramtrace::testing
