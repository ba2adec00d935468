// The shim's cost per event: unwind the stack, encode the event, push it on the ring, as
// record_alloc() does inside a hooked cudaMalloc. The stack depth is set by recursing
// through a non-inlined function; a reader thread drains the ring as the collector would,
// so the ring never fills. Run: bench/vramtrace_shim_bench (see docs/performance.md).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "nanopb/vramtrace.pb.h"
#include "recorder.h"
#include "shm_ring.h"

namespace {

constexpr uint64_t kCapacity = 8ull << 20;

struct RingUnderTest {
  RingUnderTest() {
    mapping = mmap(nullptr, vramtrace::ring::kHeaderBytes + kCapacity, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!vramtrace::preload::attach_ring_for_testing(mapping, kCapacity)) std::abort();
    const char* why = nullptr;
    if (!consumer.attach(mapping, vramtrace::ring::kHeaderBytes + kCapacity, &why)) std::abort();
    reader = std::thread([this] {
      while (!stop.load(std::memory_order_relaxed)) {
        size_t delivered = 0;
        consumer.drain([](const vramtrace::ring::RecordHeader&, const unsigned char*) {}, 1 << 16,
                       &delivered);
        // Like the collector: poll, and sleep when there is nothing to read.
        if (delivered == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ~RingUnderTest() {
    stop = true;
    reader.join();
  }
  void* mapping;
  vramtrace::ring::RingConsumer consumer;
  std::atomic<bool> stop{false};
  std::thread reader;
};

RingUnderTest& ring() {
  static RingUnderTest r;
  return r;
}

__attribute__((noinline)) void record_at_depth(int depth, benchmark::State& state) {
  if (depth > 1) {
    record_at_depth(depth - 1, state);
    benchmark::ClobberMemory();  // keeps the recursion from becoming a tail call
    return;
  }
  for (auto _ : state) {
    vramtrace::preload::AllocEvent e{};
    e.device = 0;
    e.kind = vramtrace_wire_Kind_KIND_DEVICE;
    e.api = vramtrace_wire_Api_API_CUDA_MALLOC;
    e.address = 0x7f0000000000;
    e.size = e.requested_size = 1 << 20;
    vramtrace::preload::record_alloc(e);
  }
}

void BM_RecordAlloc(benchmark::State& state) {
  ring();
  record_at_depth(static_cast<int>(state.range(0)), state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordAlloc)->Arg(16)->Arg(64)->ThreadRange(1, 2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
