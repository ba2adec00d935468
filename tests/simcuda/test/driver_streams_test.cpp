// The simulated driver's streams, events and stream-ordered copies, on a machine of two 64 MiB
// devices: priorities, events and their timing, host functions, the *Async copies and memsets,
// cuMemsetD32 and cuStreamWriteValue32. Nothing runs asynchronously, so everything a stream is
// given has happened when the call returns.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "driver_test_support.h"
#include "machine_main.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kDevices = 2;

using simcuda_test::device_address;

using simcuda_test::per_thread;

// Every test starts initialised with device 0's primary context current and both contexts
// retained; TearDown resets them, which frees what a test leaves.
class Streams : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    for (int device = 0; device < kDevices; ++device) {
      ASSERT_EQ(cuDevicePrimaryCtxRetain(&contexts_[device], device), CUDA_SUCCESS);
    }
    ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  }

  void TearDown() override {
    for (int device = 0; device < kDevices; ++device) {
      cuDevicePrimaryCtxReset(device);
      cuDevicePrimaryCtxRelease(device);
    }
    cuCtxSetCurrent(nullptr);
  }

  CUcontext contexts_[kDevices] = {};
};

TEST_F(Streams, PrioritiesAreClampedToTheRangeOfRealGpus) {
  int least = 99;
  int greatest = 99;
  ASSERT_EQ(cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);
  EXPECT_EQ(cuCtxGetStreamPriorityRange(nullptr, &greatest), CUDA_SUCCESS) << "outputs optional";

  struct Case {
    int asked;
    int got;
  };
  for (const Case c : {Case{-3, -3}, Case{-100, -5}, Case{7, 0}, Case{0, 0}}) {
    CUstream stream = nullptr;
    ASSERT_EQ(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, c.asked), CUDA_SUCCESS);
    int priority = 99;
    unsigned int flags = 99;
    EXPECT_EQ(cuStreamGetPriority(stream, &priority), CUDA_SUCCESS);
    EXPECT_EQ(priority, c.got) << "asked for " << c.asked;
    EXPECT_EQ(cuStreamGetFlags(stream, &flags), CUDA_SUCCESS);
    EXPECT_EQ(flags, unsigned{CU_STREAM_NON_BLOCKING});
    EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  }
  int priority = 99;
  EXPECT_EQ(cuStreamGetPriority(nullptr, &priority), CUDA_SUCCESS);
  EXPECT_EQ(priority, 0) << "the implicit stream's";
  CUstream stream = nullptr;
  EXPECT_EQ(cuStreamCreateWithPriority(&stream, 0x8, 0), CUDA_ERROR_INVALID_VALUE);
  const auto made_up = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuStreamGetPriority(made_up, &priority), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamGetPriority(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Streams, AStreamKnowsItsContextAndIsAlwaysIdle) {
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  CUstream on_device1 = nullptr;
  ASSERT_EQ(cuStreamCreate(&on_device1, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  CUcontext context = nullptr;
  EXPECT_EQ(cuStreamGetCtx(on_device1, &context), CUDA_SUCCESS);
  EXPECT_EQ(context, contexts_[1]);
  EXPECT_EQ(cuStreamGetCtx(CU_STREAM_LEGACY, &context), CUDA_SUCCESS);
  EXPECT_EQ(context, contexts_[0]) << "the implicit stream is the current context's";
  EXPECT_EQ(cuStreamQuery(on_device1), CUDA_SUCCESS);
  const auto cuStreamQuery_ptsz = per_thread<PFN_cuStreamQuery_v7000_ptsz>("cuStreamQuery", 7000);
  EXPECT_EQ(cuStreamQuery_ptsz(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(on_device1), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(on_device1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamGetCtx(on_device1, &context), CUDA_ERROR_INVALID_HANDLE);
}

std::int64_t now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

TEST_F(Streams, EventsTimeWhatHappensBetweenTheirRecords) {
  CUevent start = nullptr;
  CUevent end = nullptr;
  ASSERT_EQ(cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&end, CU_EVENT_BLOCKING_SYNC), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE) << "not recorded";
  EXPECT_EQ(cuEventQuery(start), CUDA_SUCCESS) << "an event never recorded is complete";

  const std::int64_t before = now_ns();
  ASSERT_EQ(cuEventRecord(start, nullptr), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(cuEventRecordWithFlags(end, CU_STREAM_LEGACY, CU_EVENT_RECORD_DEFAULT), CUDA_SUCCESS);
  const double outer_ms = static_cast<double>(now_ns() - before) / 1e6;
  EXPECT_EQ(cuEventQuery(end), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(end), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 19.0f);
  EXPECT_LE(ms, outer_ms + 0.01);
  float reversed = 0;
  ASSERT_EQ(cuEventElapsedTime(&reversed, end, start), CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(reversed, -ms) << "the order of the events is the sign";
  // The legacy ABI measures the same.
  void* legacy = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuEventElapsedTime", &legacy, 2000, 0, nullptr), CUDA_SUCCESS);
  float legacy_ms = 0;
  ASSERT_EQ(reinterpret_cast<PFN_cuEventElapsedTime_v2000>(legacy)(&legacy_ms, start, end),
            CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(legacy_ms, ms);

  EXPECT_EQ(cuEventElapsedTime(nullptr, start, end), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventRecordWithFlags(end, nullptr, 0x10), CUDA_ERROR_INVALID_VALUE);
  const auto made_up = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuEventRecord(end, made_up), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, end, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(made_up, end, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, end, 0x10), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuEventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(start), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventQuery(start), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, start, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(end), CUDA_SUCCESS);
}

TEST_F(Streams, EventsWithoutTimingHaveNoElapsedTime) {
  CUevent timed = nullptr;
  CUevent untimed = nullptr;
  ASSERT_EQ(cuEventCreate(&timed, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(timed, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(untimed, nullptr), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(cuEventElapsedTime(&ms, timed, untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(&ms, untimed, timed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(ms, -1);
  CUevent event = nullptr;
  EXPECT_EQ(cuEventCreate(&event, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE)
      << "interprocess events must not time";
  EXPECT_EQ(cuEventCreate(&event, 0x40), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Streams, EventsGoWithTheirContext) {
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuEventCreate(&event, CU_EVENT_DEFAULT), CUDA_ERROR_INVALID_CONTEXT);
}

struct Calls {
  std::thread::id thread;
  int count = 0;
  CUstream stream = nullptr;
  CUresult status = CUDA_ERROR_UNKNOWN;
};

void host_function(void* data) {
  auto* calls = static_cast<Calls*>(data);
  calls->thread = std::this_thread::get_id();
  ++calls->count;
  // The driver's lock is not held: a host function may call it (the real driver forbids it,
  // but nothing here would deadlock).
  int least = 0;
  int greatest = 0;
  cuCtxGetStreamPriorityRange(&least, &greatest);
}

void stream_callback(CUstream stream, CUresult status, void* data) {
  auto* calls = static_cast<Calls*>(data);
  calls->thread = std::this_thread::get_id();
  ++calls->count;
  calls->stream = stream;
  calls->status = status;
}

TEST_F(Streams, HostFunctionsRunAtOnceOnTheCallingThread) {
  Calls calls;
  ASSERT_EQ(cuLaunchHostFunc(nullptr, host_function, &calls), CUDA_SUCCESS);
  EXPECT_EQ(calls.count, 1) << "before the call returns";
  EXPECT_EQ(calls.thread, std::this_thread::get_id());
  const auto cuLaunchHostFunc_ptsz =
      per_thread<PFN_cuLaunchHostFunc_v10000_ptsz>("cuLaunchHostFunc", 10000);
  ASSERT_EQ(cuLaunchHostFunc_ptsz(CU_STREAM_PER_THREAD, host_function, &calls), CUDA_SUCCESS);
  EXPECT_EQ(calls.count, 2);

  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  Calls callbacks;
  ASSERT_EQ(cuStreamAddCallback(stream, stream_callback, &callbacks, 0), CUDA_SUCCESS);
  EXPECT_EQ(callbacks.count, 1);
  EXPECT_EQ(callbacks.thread, std::this_thread::get_id());
  EXPECT_EQ(callbacks.stream, stream);
  EXPECT_EQ(callbacks.status, CUDA_SUCCESS);

  EXPECT_EQ(cuStreamAddCallback(stream, stream_callback, &callbacks, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchHostFunc(stream, nullptr, &calls), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchHostFunc(stream, host_function, &calls), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamAddCallback(stream, stream_callback, &callbacks, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(calls.count, 2) << "not called for a bad stream";
  EXPECT_EQ(callbacks.count, 1);
}

TEST_F(Streams, AsyncCopiesRoundTripTheBytes) {
  std::vector<std::uint8_t> host(4096);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 7);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr c = 0;
  ASSERT_EQ(cuMemAlloc(&a, host.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, host.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&c, host.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);

  ASSERT_EQ(cuMemcpyHtoDAsync(a, host.data(), host.size(), stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync(b, a, host.size(), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyPeerAsync(c, contexts_[1], b, contexts_[0], host.size(), stream), CUDA_SUCCESS);
  std::vector<std::uint8_t> back(host.size());
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), c, back.size(), CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(back, host) << "complete when the call returns";
  std::vector<std::uint8_t> other(host.size());
  ASSERT_EQ(cuMemcpyAsync(device_address(other.data()), a, other.size(), stream), CUDA_SUCCESS);
  EXPECT_EQ(other, host);

  // The per-thread variants do the same.
  const auto htod_ptsz = per_thread<PFN_cuMemcpyHtoDAsync_v7000_ptsz>("cuMemcpyHtoDAsync", 7000);
  const auto dtoh_ptsz = per_thread<PFN_cuMemcpyDtoHAsync_v7000_ptsz>("cuMemcpyDtoHAsync", 7000);
  std::vector<std::uint8_t> zeros(host.size(), 0);
  ASSERT_EQ(htod_ptsz(a, zeros.data(), zeros.size(), CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_EQ(dtoh_ptsz(back.data(), a, back.size(), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(back, zeros);

  ASSERT_EQ(cuMemFree(b), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(c), CUDA_SUCCESS);
}

TEST_F(Streams, AsyncCopiesCheckTheirPointersAndStream) {
  std::vector<std::uint8_t> host(1024);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc(&a, host.size()), CUDA_SUCCESS);
  const auto made_up = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuMemcpyHtoDAsync(a, host.data(), host.size(), made_up), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemcpyHtoDAsync(a, host.data(), host.size() + 1, nullptr), CUDA_ERROR_INVALID_VALUE)
      << "past the allocation";
  EXPECT_EQ(cuMemcpyHtoDAsync(device_address(host.data()), host.data(), 4, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "host memory as the device side";
  EXPECT_EQ(cuMemcpyDtoHAsync(host.data(), device_address(host.data()), 4, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoDAsync(a, device_address(host.data()), 4, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyAsync(0, a, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyPeerAsync(a, nullptr, a, contexts_[0], 4, nullptr), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuMemsetD8Async(device_address(host.data()), 0, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8Async(a, 0, 4, made_up), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoHAsync(host.data(), a, 4, nullptr), CUDA_ERROR_INVALID_VALUE)
      << "freed memory";
}

TEST_F(Streams, MemsetsFillBytesAndWords) {
  constexpr std::size_t kWords = 300;
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc(&a, kWords * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(a, 0xdeadbeef, kWords), CUDA_SUCCESS);
  std::vector<std::uint32_t> words(kWords);
  ASSERT_EQ(cuMemcpyDtoH(words.data(), a, kWords * 4), CUDA_SUCCESS);
  EXPECT_EQ(words, std::vector<std::uint32_t>(kWords, 0xdeadbeef));
  ASSERT_EQ(cuMemsetD32Async(a + 4, 7, kWords - 2, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(words.data(), a, kWords * 4), CUDA_SUCCESS);
  EXPECT_EQ(words.front(), 0xdeadbeef);
  EXPECT_EQ(words[1], 7u);
  EXPECT_EQ(words[kWords - 2], 7u);
  EXPECT_EQ(words.back(), 0xdeadbeef);
  ASSERT_EQ(cuMemsetD8Async(a, 0x11, 8, CU_STREAM_LEGACY), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(words.data(), a, 8), CUDA_SUCCESS);
  EXPECT_EQ(words[0], 0x11111111u);
  EXPECT_EQ(words[1], 0x11111111u);

  EXPECT_EQ(cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE) << "not 4-byte aligned";
  EXPECT_EQ(cuMemsetD32(a, 0, kWords + 1), CUDA_ERROR_INVALID_VALUE) << "past the allocation";
  EXPECT_EQ(cuMemsetD32Async(a, 0, kWords + 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32(device_address(words.data()), 0, 1), CUDA_ERROR_INVALID_VALUE)
      << "host memory";
  EXPECT_EQ(cuMemsetD32(a, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(Streams, WriteValue32WritesLiveDeviceMemory) {
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc(&a, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(a, 0, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWriteValue32(nullptr, a + 8, 0x01020304, CU_STREAM_WRITE_VALUE_DEFAULT),
            CUDA_SUCCESS);
  const auto write_ptsz =
      per_thread<PFN_cuStreamWriteValue32_v11070_ptsz>("cuStreamWriteValue32", 11070);
  ASSERT_EQ(write_ptsz(nullptr, a + 12, 5, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), CUDA_SUCCESS);
  std::uint32_t words[16] = {};
  ASSERT_EQ(cuMemcpyDtoH(words, a, sizeof words), CUDA_SUCCESS);
  EXPECT_EQ(words[1], 0u);
  EXPECT_EQ(words[2], 0x01020304u);
  EXPECT_EQ(words[3], 5u);

  std::uint32_t host = 0;
  EXPECT_EQ(cuStreamWriteValue32(nullptr, device_address(&host), 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamWriteValue32(nullptr, a + 64, 1, 0), CUDA_ERROR_INVALID_VALUE) << "past it";
  EXPECT_EQ(cuStreamWriteValue32(nullptr, a + 2, 1, 0), CUDA_ERROR_INVALID_VALUE) << "unaligned";
  EXPECT_EQ(cuStreamWriteValue32(nullptr, a, 1, 0x4), CUDA_ERROR_INVALID_VALUE) << "flags";
  const auto made_up = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuStreamWriteValue32(made_up, a, 1, 0), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWriteValue32(nullptr, a, 1, 0), CUDA_ERROR_INVALID_VALUE) << "freed";
  EXPECT_EQ(host, 0u);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
