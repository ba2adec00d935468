// The stack walk by frame rules (preload/frame_rule_walk.h) gives the frames libunwind gives,
// on stacks built to exercise each kind of rule, and declines where it should.
#include <alloca.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "frame_rule_cache.h"
#include "frame_rule_walk.h"
#include "frame_rules.h"
#include "unwinder.h"

namespace vramtrace::preload {
namespace {

using Backtrace = int (*)(void**, int);

Backtrace libunwind_backtrace() {
  static Backtrace backtrace = [] {
    void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return library == nullptr ? nullptr
                              : reinterpret_cast<Backtrace>(dlsym(library, "unw_backtrace"));
  }();
  return backtrace;
}

constexpr int kMaxFrames = 2048;

struct Stacks {
  int max = kMaxRememberedWalk;  // deeper asks are walked without the last walk
  bool walked_ok = false;
  WalkedStack walked_info;
  std::vector<uintptr_t> walked, libunwind;
};

volatile int g_sink = 0;

// Both unwinders, from the same frame. Not inlined and not a tail call: its caller's frame is
// the first one both must agree on.
__attribute__((noinline)) void capture_both(Stacks* out) {
  std::vector<uintptr_t> ips(size_t(out->max), 0);
  out->walked_ok = walk_stack_by_frame_rules(ips.data(), out->max, &out->walked_info);
  if (out->walked_ok) out->walked.assign(ips.begin(), ips.begin() + out->walked_info.count);
  void* raw[kMaxFrames];
  const int got = libunwind_backtrace()(raw, kMaxFrames);
  for (int i = 0; i < got; ++i) out->libunwind.push_back(reinterpret_cast<uintptr_t>(raw[i]));
  g_sink = g_sink + 1;
}

// The walk's frames from capture_both's caller outwards are libunwind's last ones, and the
// frame before them is inside capture_both in both.
void expect_same_frames(const Stacks& stacks) {
  ASSERT_TRUE(stacks.walked_ok) << "the walk declined an ordinary stack";
  ASSERT_TRUE(stacks.walked_info.reached_end);
  ASSERT_GE(stacks.walked.size(), 3u);
  const std::vector<uintptr_t> outer(stacks.walked.begin() + 2, stacks.walked.end());
  ASSERT_GT(stacks.libunwind.size(), outer.size());
  const size_t offset = stacks.libunwind.size() - outer.size();
  for (size_t i = 0; i < outer.size(); ++i)
    ASSERT_EQ(outer[i], stacks.libunwind[offset + i]) << "frame " << i << " of " << outer.size();
  const uintptr_t walked_call = stacks.walked[1], libunwind_call = stacks.libunwind[offset - 1];
  const uintptr_t begin = reinterpret_cast<uintptr_t>(&capture_both);
  for (uintptr_t call : {walked_call, libunwind_call})
    EXPECT_TRUE(call > begin && call - begin < 4096)
        << "the frames before the common ones are not both inside capture_both";
}

// Frames without a frame pointer: the CFA is %rsp plus a constant.
__attribute__((noinline)) void plain(int depth, Stacks* out) {
  if (depth == 0)
    capture_both(out);
  else
    plain(depth - 1, out);
  g_sink = g_sink + depth;
}

// alloca makes the compiler keep %rbp as the frame pointer: the CFA is %rbp
// plus a constant, and %rbp is saved at a constant from the CFA.
__attribute__((noinline)) void framed(int depth, Stacks* out);

// A frame larger than 64 KiB: a large CFA offset.
__attribute__((noinline)) void large_frame(int depth, Stacks* out);

// Plain, framed and large frames in turn.
__attribute__((noinline)) void mixed(int depth, Stacks* out) {
  if (depth == 0) {
    capture_both(out);
  } else if (depth % 3 == 0) {
    framed(depth - 1, out);
  } else if (depth % 3 == 1) {
    large_frame(depth - 1, out);
  } else {
    mixed(depth - 1, out);
  }
  g_sink = g_sink + depth;
}

__attribute__((noinline)) void framed(int depth, Stacks* out) {
  auto* scratch = static_cast<volatile char*>(alloca(size_t(g_sink % 7 + 16 + depth % 3)));
  scratch[0] = char(depth);
  mixed(depth, out);
  g_sink = g_sink + scratch[0];
}

__attribute__((noinline)) void large_frame(int depth, Stacks* out) {
  volatile char scratch[70000];
  scratch[depth] = char(depth);
  mixed(depth, out);
  g_sink = g_sink + scratch[depth];
}

TEST(FrameRuleWalk, PlainFramesAreLibunwinds) {
  ASSERT_NE(libunwind_backtrace(), nullptr);
  for (int depth : {0, 1, 5, 40, 200}) {
    Stacks stacks;
    plain(depth, &stacks);
    SCOPED_TRACE(depth);
    expect_same_frames(stacks);
    EXPECT_GT(stacks.walked.size(), size_t(depth));
  }
}

TEST(FrameRuleWalk, FramePointerAndLargeFramesAreLibunwinds) {
  for (int depth : {3, 4, 5, 30, 31, 32}) {
    Stacks stacks;
    mixed(depth, &stacks);
    SCOPED_TRACE(depth);
    expect_same_frames(stacks);
  }
}

// Frames of another object, with its own call frame information: libc's qsort calling back.
Stacks* g_under_qsort = nullptr;
int compare_and_capture(const void* a, const void* b) {
  if (g_under_qsort->walked.empty() && g_under_qsort->libunwind.empty())
    capture_both(g_under_qsort);
  return std::memcmp(a, b, sizeof(int));
}

TEST(FrameRuleWalk, FramesInsideLibcAreLibunwinds) {
  Stacks stacks;
  g_under_qsort = &stacks;
  int values[2] = {2, 1};
  std::qsort(values, 2, sizeof(int), &compare_and_capture);
  g_under_qsort = nullptr;
  expect_same_frames(stacks);
}

TEST(FrameRuleWalk, AnotherThreadsStackIsLibunwinds) {
  Stacks stacks;
  std::thread thread([&] { mixed(20, &stacks); });
  thread.join();
  expect_same_frames(stacks);
}

TEST(FrameRuleWalk, AStackDeeperThanAskedIsCutAndSaysSo) {
  Stacks stacks;
  stacks.max = 64;
  plain(300, &stacks);
  ASSERT_TRUE(stacks.walked_ok);
  EXPECT_EQ(stacks.walked_info.count, 64);
  EXPECT_FALSE(stacks.walked_info.reached_end);
  // The 64 it gave are the innermost: the same as the first of a full walk from that frame.
  Stacks full;
  plain(300, &full);
  ASSERT_TRUE(full.walked_ok);
  ASSERT_GT(full.walked.size(), 300u);
  EXPECT_TRUE(std::equal(stacks.walked.begin() + 2, stacks.walked.end(), full.walked.begin() + 2));
}

// Inside a signal handler the stack holds the kernel's signal frame, whose rule is an
// expression: the walk declines, and the Unwinder's stack is libunwind's.
Stacks* g_in_handler = nullptr;
const Unwinder* g_handler_unwinder = nullptr;
uintptr_t g_unwinder_ips[256];
int g_unwinder_depth = 0;

void capture_in_handler(int) {
  capture_both(g_in_handler);
  bool truncated = false;
  if (g_handler_unwinder != nullptr)
    g_unwinder_depth = g_handler_unwinder->capture(g_unwinder_ips, 256, &truncated);
}

void raise_with_handler(int flags) {
  struct sigaction action = {}, previous = {};
  action.sa_handler = &capture_in_handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &previous, nullptr);
}

TEST(FrameRuleWalk, SignalFramesAreLeftToLibunwind) {
  Stacks stacks;
  Unwinder unwinder;
  unwinder.init();
  g_in_handler = &stacks;
  g_handler_unwinder = &unwinder;
  raise_with_handler(0);
  g_in_handler = nullptr;
  g_handler_unwinder = nullptr;
  EXPECT_FALSE(stacks.walked_ok) << "the walk went through a signal frame";
  // The Unwinder fell back: its frames (this test program's own left out from the top, as the
  // shim's are) are libunwind's, through the signal frame down to main.
  ASSERT_GT(g_unwinder_depth, 3);
  ASSERT_GE(stacks.libunwind.size(), size_t(g_unwinder_depth));
  const size_t offset = stacks.libunwind.size() - size_t(g_unwinder_depth);
  for (int i = 0; i < g_unwinder_depth; ++i)
    EXPECT_EQ(g_unwinder_ips[i], stacks.libunwind[offset + size_t(i)]) << i;
}

TEST(FrameRuleWalk, AnAlternateSignalStackIsLeftToLibunwind) {
  std::vector<char> alternate(size_t(1) << 16);
  stack_t stack = {}, previous = {};
  stack.ss_sp = alternate.data();
  stack.ss_size = alternate.size();
  ASSERT_EQ(sigaltstack(&stack, &previous), 0);
  Stacks stacks;
  g_in_handler = &stacks;
  raise_with_handler(SA_ONSTACK);
  g_in_handler = nullptr;
  sigaltstack(&previous, nullptr);
  EXPECT_FALSE(stacks.walked_ok);
  EXPECT_FALSE(stacks.libunwind.empty());
}

TEST(FrameRuleWalk, TheUnwinderWalksOrdinaryStacksItself) {
  // The same stack through the Unwinder with and without frame rules: the same frames.
  Unwinder with_rules, without_rules;
  with_rules.init(true);
  without_rules.init(false);
  EXPECT_STREQ(with_rules.name(), "frame-rules+libunwind");
  EXPECT_STREQ(without_rules.name(), "libunwind");
  uintptr_t a[256], b[256];
  bool truncated_a = true, truncated_b = true;
  // The test program is "the shim" here, so its frames are left out from the top: what stays
  // is what called the test body (gtest's frames are in this program too), so use a thread.
  int depth_a = 0, depth_b = 0;
  std::thread thread([&] {
    depth_a = with_rules.capture(a, 256, &truncated_a);
    depth_b = without_rules.capture(b, 256, &truncated_b);
  });
  thread.join();
  ASSERT_GT(depth_a, 0);
  ASSERT_EQ(depth_a, depth_b);
  EXPECT_FALSE(truncated_a);
  EXPECT_FALSE(truncated_b);
  for (int i = 0; i < depth_a; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

// ---- The last walk, reused ----

// Two functions alike in all but their address: called at the same depth, their callees' frames
// lie at the same addresses, and only the return address tells the stacks apart.
__attribute__((noinline)) void via_a(const int* path, int depth, Stacks* out);
__attribute__((noinline)) void via_b(const int* path, int depth, Stacks* out);

// Follows `path`: each step one of plain-like, framed-like, large, via_a, via_b.
__attribute__((noinline)) void along(const int* path, int depth, Stacks* out) {
  if (depth == 0) {
    capture_both(out);
  } else {
    switch (path[0]) {
      case 0:
        along(path + 1, depth - 1, out);
        break;
      case 1: {
        auto* scratch = static_cast<volatile char*>(alloca(size_t(16 + path[1] % 5)));
        scratch[0] = char(depth);
        along(path + 1, depth - 1, out);
        g_sink = g_sink + scratch[0];
        break;
      }
      case 2: {
        volatile char scratch[9000];
        scratch[depth] = char(depth);
        along(path + 1, depth - 1, out);
        g_sink = g_sink + scratch[depth];
        break;
      }
      case 3:
        via_a(path + 1, depth - 1, out);
        break;
      default:
        via_b(path + 1, depth - 1, out);
        break;
    }
  }
  g_sink = g_sink + depth;
}

__attribute__((noinline)) void via_a(const int* path, int depth, Stacks* out) {
  along(path, depth, out);
  g_sink = g_sink + 1;
}

__attribute__((noinline)) void via_b(const int* path, int depth, Stacks* out) {
  along(path, depth, out);
  g_sink = g_sink + 2;
}

TEST(FrameRuleWalk, TheSameStackAgainIsCheckedNotWalked) {
  const int path[8] = {0, 1, 2, 3, 4, 0, 1, 0};
  Stacks first, second;
  // One call site for both (a loop over a volatile count is not unrolled into two).
  volatile int rounds = 2;
  for (int i = 0; i < rounds; ++i) along(path, 8, i == 0 ? &first : &second);
  expect_same_frames(second);
  EXPECT_EQ(second.walked, first.walked);
  // Only this test's capture_both differs (its vector's buffer moved %rbp or not): at most the
  // walk's own frame and capture_both's are stepped.
  EXPECT_LE(second.walked_info.frames_stepped, 2);
  EXPECT_GT(second.walked_info.count, 12);
}

// Walks from one call site, or another: the frames and the walk's id.
struct IdentifiedWalk {
  std::vector<uintptr_t> ips;
  uint64_t id = 0;
};
__attribute__((noinline)) IdentifiedWalk walk_identified() {
  IdentifiedWalk out;
  out.ips.resize(64);
  WalkedStack walked;
  if (walk_stack_by_frame_rules(out.ips.data(), 64, &walked)) {
    out.ips.resize(size_t(walked.count));
    out.id = walked.walk_id;
  }
  g_sink = g_sink + 1;
  return out;
}
__attribute__((noinline)) IdentifiedWalk walk_identified_elsewhere() {
  IdentifiedWalk out = walk_identified();
  g_sink = g_sink + 2;
  return out;
}

// The shim names a stack by its walk's id without hashing its frames (stack_names.h): a walk
// that finds the last one's frames whole keeps its id; one with other frames never has an id
// seen before.
TEST(FrameRuleWalk, AWalkKeepsItsIdOnlyForTheSameFrames) {
  std::vector<IdentifiedWalk> walks;
  volatile int rounds = 3;  // one call site for every round
  for (int i = 0; i < rounds; ++i) walks.push_back(walk_identified());
  walks.push_back(walk_identified_elsewhere());
  for (int i = 0; i < rounds; ++i) walks.push_back(walk_identified());
  std::map<uint64_t, std::vector<uintptr_t>> frames_of;
  for (size_t i = 0; i < walks.size(); ++i) {
    SCOPED_TRACE("walk " + std::to_string(i));
    ASSERT_NE(walks[i].id, 0u);
    ASSERT_GT(walks[i].ips.size(), 3u);
    const auto [known, added] = frames_of.try_emplace(walks[i].id, walks[i].ips);
    EXPECT_TRUE(added || known->second == walks[i].ips) << "one id, two stacks";
  }
  // The same frames again keep their id (apart from the walk's own first frame, which is the
  // same instruction at the same depth in every round).
  EXPECT_EQ(walks[2].id, walks[1].id);
  EXPECT_NE(walks[3].id, walks[2].id);
  EXPECT_EQ(walks[6].id, walks[5].id);
}

TEST(FrameRuleWalk, StacksThatShareFramesWithTheLastOneAreLibunwinds) {
  // Random paths, one after another: each walk meets the last one's frames at some depth, often
  // at the same addresses under a different caller (via_a against via_b), where only the
  // return addresses differ.
  std::srand(7);
  int reused = 0, walks = 0;
  for (int round = 0; round < 400; ++round) {
    int path[40];
    const int depth = std::rand() % 40;
    for (int& step : path) step = std::rand() % 5;
    Stacks stacks;
    along(path, depth, &stacks);
    SCOPED_TRACE(round);
    expect_same_frames(stacks);
    if (testing::Test::HasFatalFailure()) return;
    ++walks;
    if (stacks.walked_info.frames_stepped < stacks.walked_info.count) ++reused;
  }
  EXPECT_GT(reused, walks / 2) << "the last walk was seldom reused: the test tests little";
}

// A frame-pointer frame at two places, its callee's frame at one: the callee's pc and sp are
// the same both times, and only %rbp says that the frames above it moved.
uintptr_t g_leaf_sp = 0;

__attribute__((noinline)) void leaf_under_frame_pointer(Stacks* out) {
  volatile int marker = 0;
  g_leaf_sp = reinterpret_cast<uintptr_t>(&marker);
  if (out != nullptr) capture_both(out);
  g_sink = g_sink + marker;
}

__attribute__((noinline)) void with_frame_pointer(size_t extra, Stacks* out) {
  auto* scratch = static_cast<volatile char*>(alloca(extra + 1));
  scratch[0] = 1;
  leaf_under_frame_pointer(out);
  g_sink = g_sink + scratch[0];
}

__attribute__((noinline)) void from_small_frame(size_t extra, Stacks* out) {
  volatile char pad[64];
  pad[0] = 1;
  with_frame_pointer(extra, out);
  g_sink = g_sink + pad[0];
}

__attribute__((noinline)) void from_large_frame(size_t extra, Stacks* out) {
  volatile char pad[576];
  pad[0] = 1;
  with_frame_pointer(extra, out);
  g_sink = g_sink + pad[0];
}

TEST(FrameRuleWalk, AMovedFramePointerFrameIsNotTakenForTheLastOne) {
  // Find the alloca that puts the leaf at the same place under the larger caller.
  from_large_frame(64, nullptr);
  const uintptr_t leaf_sp = g_leaf_sp;
  size_t extra = 0;
  bool found = false;
  for (; extra <= 2048 && !found; extra += 8) {
    from_small_frame(extra, nullptr);
    found = g_leaf_sp == leaf_sp;
  }
  ASSERT_TRUE(found) << "no alloca put the leaf's frame at the same address";
  extra -= 8;
  // Both from one call site, so that everything above the two callers is alike too: the words
  // the first walk loaded where its frames were are still there (inside the second one's
  // alloca), and only the moved %rbp tells the walks apart.
  Stacks large, small;
  void (*volatile routes[2])(size_t, Stacks*) = {&from_large_frame, &from_small_frame};
  volatile int rounds = 2;
  size_t volatile extras[2] = {64, extra};
  Stacks* volatile outs[2] = {&large, &small};
  for (int i = 0; i < rounds; ++i) routes[i](extras[i], outs[i]);
  expect_same_frames(large);
  expect_same_frames(small);
  EXPECT_NE(small.walked, large.walked);
}

TEST(FrameRuleWalk, ForgottenRulesAreNotReused) {
  const int path[4] = {0, 0, 0, 0};
  Stacks first, second;
  along(path, 4, &first);
  forget_frame_rules();
  along(path, 4, &second);
  expect_same_frames(second);
  EXPECT_EQ(second.walked_info.frames_stepped, second.walked_info.count);
}

TEST(FrameRuleWalk, AnUnloadSeenTwiceForgetsTheRulesOnce) {
  // The dlclose hook and the module scan both report the loader's unload count.
  const uint64_t before = frame_rules_generation();
  forget_frame_rules_after_unloads(1000001);
  EXPECT_EQ(frame_rules_generation(), before + 1);
  forget_frame_rules_after_unloads(1000001);
  EXPECT_EQ(frame_rules_generation(), before + 1);
  forget_frame_rules_after_unloads(1000002);
  EXPECT_EQ(frame_rules_generation(), before + 2);
}

TEST(FrameRuleWalk, ThreadsGiveBackWhatTheyRemembered) {
  const int before = live_last_walks_for_testing();
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 10; ++t)
      threads.emplace_back([] {
        Stacks stacks;
        plain(3, &stacks);
        expect_same_frames(stacks);
      });
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_EQ(live_last_walks_for_testing(), before);
}

TEST(FrameRules, AFunctionsFirstInstructionHasTheCallersReturnAddressOnTop) {
  const FrameRule rule = find_frame_rule(reinterpret_cast<uintptr_t>(&plain));
  EXPECT_EQ(rule.kind, FrameRule::Kind::kCfaFromRsp);
  EXPECT_EQ(rule.cfa_offset, 8);
  EXPECT_EQ(rule.rbp, FrameRule::SavedRbp::kUnchanged);
}

TEST(FrameRules, AddressesOutsideLoadedCodeHaveNone) {
  EXPECT_EQ(find_frame_rule(0x10).kind, FrameRule::Kind::kUnsupported);
  forget_frame_rules();
  EXPECT_EQ(cached_frame_rule(0x10).kind, FrameRule::Kind::kUnsupported);
  EXPECT_EQ(cached_frame_rule(reinterpret_cast<uintptr_t>(&plain)).kind,
            FrameRule::Kind::kCfaFromRsp);
}

TEST(FrameRules, PackedRulesComeBackWhole) {
  FrameRule rule;
  rule.kind = FrameRule::Kind::kCfaFromRbp;
  rule.rbp = FrameRule::SavedRbp::kAtOffset;
  rule.rbp_offset = -16;
  rule.cfa_offset = -70008;
  const FrameRule back = FrameRule::unpack(rule.pack());
  EXPECT_EQ(back.kind, rule.kind);
  EXPECT_EQ(back.rbp, rule.rbp);
  EXPECT_EQ(back.rbp_offset, -16);
  EXPECT_EQ(back.cfa_offset, -70008);
}

}  // namespace
}  // namespace vramtrace::preload
