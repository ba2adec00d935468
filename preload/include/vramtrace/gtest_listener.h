// A GoogleTest event listener that marks each test in the GPU memory trace, so that
// `vramtrace gate` reports the leaks of each test apart (the C++ twin of vramtrace.pytest).
// Header only; it finds the shim's C API with dlsym, so the test binary links nothing of
// vramtrace and runs unchanged outside `vramtrace run`:
//
//   #include <vramtrace/gtest_listener.h>
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     vramtrace::install_gtest_listener();
//     return RUN_ALL_TESTS();
//   }
//
//   vramtrace run -o gpu.db -- ./my_gpu_tests
//   vramtrace gate gpu.db --max-leaked-bytes 0      # lists "leaks by test"
//
// Each test runs inside a range named "test:Suite.Name" (its set-up and tear-down included).
#ifndef VRAMTRACE_GTEST_LISTENER_H
#define VRAMTRACE_GTEST_LISTENER_H

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "vramtrace/vramtrace.h"

namespace vramtrace {

class GtestRangeListener : public ::testing::EmptyTestEventListener {
 public:
  GtestRangeListener()
      : push_(
            reinterpret_cast<vramtrace_range_push_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_push"))),
        pop_(reinterpret_cast<vramtrace_range_pop_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_pop"))) {
  }

  void OnTestStart(const ::testing::TestInfo& test) override {
    if (push_ == nullptr || pop_ == nullptr) return;
    const std::string name = std::string("test:") + test.test_suite_name() + "." + test.name();
    push_(name.c_str());
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    if (push_ != nullptr && pop_ != nullptr) pop_();
  }

 private:
  vramtrace_range_push_fn push_;
  vramtrace_range_pop_fn pop_;
};

// Appends the listener to GoogleTest's; call after InitGoogleTest, before RUN_ALL_TESTS.
inline void install_gtest_listener() {
  ::testing::UnitTest::GetInstance()->listeners().Append(new GtestRangeListener);
}

}  // namespace vramtrace

#endif
