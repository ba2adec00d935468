// The CUPTI library's stacks leave out CUDA's frames above its callbacks
// (Unwinder::skip_innermost_object). Played here with libc's qsort, which calls back into this
// program as libcuda calls back into the CUPTI library: with libc skipped, the stack no longer
// starts inside libc.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "unwinder.h"

namespace vramtrace::preload {
namespace {

struct Captured {
  const Unwinder* unwinder = nullptr;
  uintptr_t ips[64];
  int depth = 0;
};
Captured* g_captured = nullptr;

int compare_and_capture(const void* a, const void* b) {
  bool truncated = false;
  g_captured->depth = g_captured->unwinder->capture(g_captured->ips, 64, &truncated);
  return std::memcmp(a, b, sizeof(int));
}

// The stack as seen from inside a qsort comparator.
Captured capture_under_qsort(const Unwinder& unwinder) {
  Captured captured;
  captured.unwinder = &unwinder;
  g_captured = &captured;
  int values[2] = {2, 1};
  std::qsort(values, 2, sizeof(int), &compare_and_capture);
  g_captured = nullptr;
  return captured;
}

bool in_libc(uintptr_t ip) {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(ip), &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "libc.so") != nullptr;
}

TEST(UnwinderSkip, CallbackFramesOfASkippedObjectAreLeftOut) {
  // This test program holds the record path, so its own frames are "the shim's" and skipped
  // from the top: qsort's frames in libc come first.
  Unwinder plain;
  plain.init();
  const Captured before = capture_under_qsort(plain);
  ASSERT_GT(before.depth, 0);
  ASSERT_TRUE(in_libc(before.ips[0])) << "the first frame is not qsort's";

  Unwinder skipping;
  skipping.init();
  // The object of the first frame, libc: not &std::qsort, which under ThreadSanitizer is its
  // interceptor's, in another object.
  ASSERT_TRUE(skipping.skip_innermost_object(reinterpret_cast<const void*>(before.ips[0])));
  const Captured after = capture_under_qsort(skipping);
  EXPECT_LT(after.depth, before.depth);
  if (after.depth > 0) {
    EXPECT_FALSE(in_libc(after.ips[0]));
  }
}

TEST(UnwinderSkip, UnknownAddressesAreRefused) {
  Unwinder unwinder;
  unwinder.init();
  EXPECT_FALSE(unwinder.skip_innermost_object(nullptr));
  EXPECT_FALSE(unwinder.skip_innermost_object(reinterpret_cast<const void*>(0x10)));
}

}  // namespace
}  // namespace vramtrace::preload
