// Threads are named in the trace by the names they gave themselves, read by the collector
// when a thread first appears.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "collector/thread_name.h"
#include "ingest_harness.h"

namespace vramtrace {
namespace {

using testing_support::IngestHarness;

// A thread that names itself and waits, alive, until released.
class NamedThread {
 public:
  explicit NamedThread(const char* name)
      : thread_([this, name] {
          pthread_setname_np(pthread_self(), name);
          std::unique_lock lock(mutex_);
          tid_ = static_cast<uint32_t>(syscall(SYS_gettid));
          changed_.notify_all();
          changed_.wait(lock, [this] { return released_; });
        }) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return tid_ != 0; });
  }
  ~NamedThread() {
    {
      const std::scoped_lock lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  uint32_t tid() const { return tid_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  uint32_t tid_ = 0;
  bool released_ = false;
  std::thread thread_;
};

TEST(ThreadNameTest, ReadsWhatTheThreadCalledItself) {
  NamedThread worker("pt_autograd_0");
  const auto name = collector::read_thread_name(static_cast<uint32_t>(getpid()), worker.tid());
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(*name, "pt_autograd_0");
  EXPECT_FALSE(collector::read_thread_name(static_cast<uint32_t>(getpid()), 0x7ffffff0));
}

TEST(ThreadNameTest, ThreadsOfTheTraceCarryTheirNames) {
  NamedThread worker("vt-loader-3");
  IngestHarness harness(wire::BACKEND_PRELOAD, static_cast<uint32_t>(getpid()));
  wire::Envelope alloc = IngestHarness::cuda_malloc(0x10000, 512, {0x1234});
  alloc.mutable_alloc()->set_tid(worker.tid());
  harness.feed(alloc);
  const storage::TraceReader& reader = harness.finish();
  bool found = false;
  for (const auto& thread : reader.threads()) {
    if (thread.tid != worker.tid()) continue;
    found = true;
    ASSERT_TRUE(thread.name.has_value());
    EXPECT_EQ(*thread.name, "vt-loader-3");
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace vramtrace
