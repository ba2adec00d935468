// A GoogleTest event listener that marks each test in the GPU memory trace, so that
// `vramtrace gate` reports the leaks of each test apart (the C++ twin of vramtrace.pytest),
// and that fails a test, at its end, when it breaks its GPU memory limits: what it allocated
// and left live, or the most of its allocations live at once. Header only; it finds the
// shim's C API with dlsym, so the test binary links nothing of vramtrace and runs unchanged
// (its limits unchecked) outside `vramtrace run`:
//
//   #include <vramtrace/gtest_listener.h>
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     vramtrace::install_gtest_listener();  // or ({.leaked_bytes = 0}): every test
//     return RUN_ALL_TESTS();
//   }
//
//   TEST(Model, ForwardFreesItsActivations) {
//     VRAMTRACE_LIMIT_GPU_LEAKS(0);               // this test: nothing may stay live
//     VRAMTRACE_LIMIT_GPU_MEMORY(512ull << 20);   // nor 512 MiB be live at once
//     ...
//   }
//
//   vramtrace run -o gpu.db -- ./my_gpu_tests   // a test over its limits fails, with stacks
//   vramtrace gate gpu.db --max-leaked-bytes 0  // lists "leaks by test"
//
// Each test runs inside a range named "test:Suite.Name" (its set-up and tear-down included);
// its limits are judged over the same span, by the collector, which has read every event
// the test made when it answers (vramtrace_live_since in vramtrace.h).
#ifndef VRAMTRACE_GTEST_LISTENER_H
#define VRAMTRACE_GTEST_LISTENER_H

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "vramtrace/vramtrace.h"

namespace vramtrace {

// The limits a test is judged against at its end; unset ones are not checked.
struct GtestLimits {
  std::optional<unsigned long long> leaked_bytes;  // allocated in the test, live at its end
  std::optional<unsigned long long> peak_bytes;    // most of its allocations live at once
};

// The limits of the test running now: the listener's defaults when it starts; the test's
// body changes them with the macros below.
inline GtestLimits& current_gtest_limits() {
  static GtestLimits limits;
  return limits;
}

#define VRAMTRACE_LIMIT_GPU_LEAKS(bytes) \
  (::vramtrace::current_gtest_limits().leaked_bytes = (bytes))
#define VRAMTRACE_LIMIT_GPU_MEMORY(bytes) (::vramtrace::current_gtest_limits().peak_bytes = (bytes))

class GtestRangeListener : public ::testing::EmptyTestEventListener {
 public:
  // `timeout_ms`: how long a test's end may wait for the collector to catch up with it.
  explicit GtestRangeListener(GtestLimits defaults = {}, int timeout_ms = 120000)
      : defaults_(defaults),
        timeout_ms_(timeout_ms),
        push_(find<vramtrace_range_push_fn>("vramtrace_range_push")),
        pop_(find<vramtrace_range_pop_fn>("vramtrace_range_pop")),
        checkpoint_(find<vramtrace_checkpoint_fn>("vramtrace_checkpoint")),
        live_since_(find<vramtrace_live_since_fn>("vramtrace_live_since")) {}

  void OnTestStart(const ::testing::TestInfo& test) override {
    current_gtest_limits() = defaults_;
    if (push_ != nullptr && pop_ != nullptr) {
      const std::string name = std::string("test:") + test.test_suite_name() + "." + test.name();
      push_(name.c_str());
    }
    started_at_ = checkpoint_ != nullptr ? checkpoint_() : 0;
  }

  void OnTestEnd(const ::testing::TestInfo& test) override {
    judge(test);
    if (push_ != nullptr && pop_ != nullptr) pop_();
  }

 private:
  template <class Fn>
  static Fn find(const char* name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
  }

  static std::string bytes_text(unsigned long long bytes) {
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  }

  // Fails the test (a listener may, in OnTestEnd: GoogleTest still counts the failure as the
  // test's) when it broke a limit, with the collector's report of what it left live.
  void judge(const ::testing::TestInfo& test) {
    const unsigned long long checkpoint = started_at_;
    started_at_ = 0;
    if (checkpoint == 0 || live_since_ == nullptr) return;
    const GtestLimits limits = current_gtest_limits();
    // The query also closes the checkpoint in the collector, so it is made even when there
    // is nothing to judge.
    vramtrace_live_summary summary{};
    std::vector<char> report(16384);
    const long length =
        live_since_(checkpoint, &summary, report.data(), report.size(), timeout_ms_);
    if (!limits.leaked_bytes && !limits.peak_bytes) return;
    if (test.result() != nullptr && test.result()->Failed()) return;  // failed on its own
    if (length < 0) {
      ADD_FAILURE() << "vramtrace: the GPU memory limits of " << test.test_suite_name() << "."
                    << test.name()
                    << " could not be judged (no answer from the collector: " << length << ")";
      return;
    }
    std::string broken;
    if (limits.leaked_bytes && summary.live_bytes > *limits.leaked_bytes)
      broken += "leaked " + bytes_text(summary.live_bytes) + " of GPU memory (limit " +
                bytes_text(*limits.leaked_bytes) + ")";
    if (limits.peak_bytes && summary.peak_bytes > *limits.peak_bytes)
      broken += std::string(broken.empty() ? "" : "; ") + "held " + bytes_text(summary.peak_bytes) +
                " of GPU memory at once (limit " + bytes_text(*limits.peak_bytes) + ")";
    if (broken.empty()) return;
    ADD_FAILURE() << "vramtrace: " << test.test_suite_name() << "." << test.name() << " " << broken
                  << "\n"
                  << report.data();
  }

  GtestLimits defaults_;
  int timeout_ms_;
  vramtrace_range_push_fn push_;
  vramtrace_range_pop_fn pop_;
  vramtrace_checkpoint_fn checkpoint_;
  vramtrace_live_since_fn live_since_;
  unsigned long long started_at_ = 0;
};

// Appends the listener to GoogleTest's; call after InitGoogleTest, before RUN_ALL_TESTS.
// `defaults`: the limits of every test that does not set its own.
inline void install_gtest_listener(GtestLimits defaults = {}) {
  ::testing::UnitTest::GetInstance()->listeners().Append(new GtestRangeListener(defaults));
}

}  // namespace vramtrace

#endif
