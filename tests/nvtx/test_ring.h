// A ring for the shim's record path inside a test process, read back as the collector would:
// each record decoded with libprotobuf.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "recorder.h"
#include "shm_ring.h"
#include "vramtrace.pb.h"  // libprotobuf's

namespace vramtrace::testing {

inline uint32_t this_tid() {
  return static_cast<uint32_t>(syscall(SYS_gettid));
}

// One per process: the shim's record path has one ring. Attached on first use; every test
// starts by draining what earlier tests left (drain()).
class TestRing {
 public:
  static constexpr uint64_t kCapacity = 8ull << 20;

  static TestRing& get() {
    static TestRing ring;
    return ring;
  }

  // Every record written since the last call, decoded.
  std::vector<wire::Envelope> drain() {
    std::vector<wire::Envelope> out;
    size_t delivered = 0;
    do {
      auto status = consumer_.drain(
          [&](const ring::RecordHeader& h, const unsigned char* payload) {
            wire::Envelope env;
            EXPECT_TRUE(env.ParseFromArray(payload, static_cast<int>(h.payload_bytes)))
                << "a record does not decode";
            out.push_back(std::move(env));
          },
          1 << 20, &delivered);
      EXPECT_EQ(status, ring::RingConsumer::Status::kOk);
    } while (delivered != 0);
    return out;
  }

  // The markers among them (other records, e.g. the modules, are skipped).
  std::vector<wire::Marker> drain_markers() {
    std::vector<wire::Marker> out;
    for (auto& env : drain())
      if (env.body_case() == wire::Envelope::kMarker) out.push_back(env.marker());
    return out;
  }

 private:
  TestRing() {
    mapping_ = mmap(nullptr, ring::kHeaderBytes + kCapacity, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(mapping_, MAP_FAILED);
    EXPECT_TRUE(preload::attach_ring_for_testing(mapping_, kCapacity));
    const char* why = nullptr;
    EXPECT_TRUE(consumer_.attach(mapping_, ring::kHeaderBytes + kCapacity, &why)) << why;
  }

  void* mapping_;
  ring::RingConsumer consumer_;
};

// Sets the shim's state for one scope (to test what it does when not recording).
class ShimStateScope {
 public:
  explicit ShimStateScope(preload::ShimState state)
      : saved_(preload::g_shim_state.exchange(static_cast<int>(state))) {}
  ~ShimStateScope() { preload::g_shim_state.store(saved_); }
  ShimStateScope(const ShimStateScope&) = delete;
  ShimStateScope& operator=(const ShimStateScope&) = delete;

 private:
  int saved_;
};

}  // namespace vramtrace::testing
