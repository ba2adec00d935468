// The simulated CUDA driver through its public API (cuda.h), on a machine of two 64 MiB
// devices: initialisation, devices, contexts, memory, streams, pools, copies and errors. The
// virtual memory API has its own test (driver_vmm_test.cpp), and so has cuGetProcAddress
// (proc_address_test.cpp).

#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "driver_test_support.h"
#include "machine_main.h"

namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kCapacity = 64 * kMiB;
constexpr int kDevices = 2;

// A value no call returns, to see whether a failing call wrote its output.
constexpr CUdeviceptr kUntouched = 0xdeadbe00;

using simcuda_test::host_pointer;

using simcuda_test::device_address;

using simcuda_test::per_thread;

// What the driver answered before cuInit, asked by main() before any test runs (tests call
// cuInit, and it cannot be undone).
struct BeforeInit {
  CUresult device_count = CUDA_SUCCESS;
  int count = -1;
  CUresult allocation = CUDA_SUCCESS;
  CUdeviceptr ptr = kUntouched;
  CUresult current_context = CUDA_SUCCESS;
  CUresult retain = CUDA_SUCCESS;
  CUresult reserve = CUDA_SUCCESS;
  CUresult driver_version = CUDA_ERROR_UNKNOWN;
  int version = 0;
  CUresult error_name = CUDA_ERROR_UNKNOWN;
  const char* name = nullptr;
  CUresult proc_address = CUDA_ERROR_UNKNOWN;
  void* function = nullptr;
};
BeforeInit g_before_init;

void ask_before_init() {
  BeforeInit& asked = g_before_init;
  asked.device_count = cuDeviceGetCount(&asked.count);
  asked.allocation = cuMemAlloc(&asked.ptr, 16);
  CUcontext context = nullptr;
  asked.current_context = cuCtxGetCurrent(&context);
  asked.retain = cuDevicePrimaryCtxRetain(&context, 0);
  CUdeviceptr reserved = 0;
  asked.reserve = cuMemAddressReserve(&reserved, 2 * kMiB, 0, 0, 0);
  asked.driver_version = cuDriverGetVersion(&asked.version);
  asked.error_name = cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &asked.name);
  asked.proc_address = cuGetProcAddress("cuInit", &asked.function, 13000, 0, nullptr);
}

// Nothing works before cuInit, except what needs no driver state.
TEST(BeforeInit, OnlyVersionErrorNamesAndEntryPointsWork) {
  const BeforeInit& asked = g_before_init;
  EXPECT_EQ(asked.device_count, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(asked.count, -1);
  EXPECT_EQ(asked.allocation, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(asked.ptr, kUntouched);
  EXPECT_EQ(asked.current_context, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(asked.retain, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(asked.reserve, CUDA_ERROR_NOT_INITIALIZED);

  EXPECT_EQ(asked.driver_version, CUDA_SUCCESS);
  EXPECT_EQ(asked.version, 13000);
  EXPECT_EQ(asked.error_name, CUDA_SUCCESS);
  EXPECT_STREQ(asked.name, "CUDA_ERROR_NOT_INITIALIZED");
  EXPECT_EQ(asked.proc_address, CUDA_SUCCESS);
  EXPECT_NE(asked.function, nullptr);
}

// Every test starts initialised, with device 0's primary context retained and current, empty
// devices and no mappings, and leaves the machine that way.
class Driver : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    for (int device = 0; device < kDevices; ++device) {
      ASSERT_EQ(cuDevicePrimaryCtxRetain(&contexts_[device], device), CUDA_SUCCESS);
      ASSERT_EQ(cuCtxSetCurrent(contexts_[device]), CUDA_SUCCESS);
      ASSERT_EQ(used(), 0u) << "device " << device << " is not empty";
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

  // Bytes taken on the current context's device.
  static std::size_t used() {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    EXPECT_EQ(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
    return total_bytes - free_bytes;
  }

  CUcontext contexts_[kDevices] = {};
};

TEST_F(Driver, InitIsIdempotentAndTakesNoFlags) {
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDriverGetVersion(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, DescribesItsDevices) {
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, kDevices);
  EXPECT_EQ(cuDeviceGetCount(nullptr), CUDA_ERROR_INVALID_VALUE);

  CUdevice device = -1;
  ASSERT_EQ(cuDeviceGet(&device, 1), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(cuDeviceGet(&device, kDevices), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(&device, -1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(nullptr, 0), CUDA_ERROR_INVALID_VALUE);

  char name[64] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
  EXPECT_EQ(std::string(name), "simcuda GPU 1");
  char short_name[4] = {'x', 'x', 'x', 'x'};
  ASSERT_EQ(cuDeviceGetName(short_name, sizeof short_name, 0), CUDA_SUCCESS);
  EXPECT_EQ(std::string(short_name), "sim") << "truncated and terminated";
  EXPECT_EQ(cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, kDevices), CUDA_ERROR_INVALID_DEVICE);

  std::size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
  EXPECT_EQ(total, kCapacity);
  EXPECT_EQ(cuDeviceTotalMem(&total, kDevices), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, ContextsAreRetainedPerDeviceAndCurrentPerThread) {
  CUcontext again = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 1), CUDA_SUCCESS);
  EXPECT_EQ(again, contexts_[1]) << "one primary context per device";
  EXPECT_NE(contexts_[0], contexts_[1]);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);

  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, contexts_[0]);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  ASSERT_EQ(cuCtxGetDevice_v2(&device, contexts_[0]), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize_v2(contexts_[0]), CUDA_SUCCESS);

  // Another thread has no current context until it sets one.
  std::thread([this] {
    CUcontext none = contexts_[0];
    EXPECT_EQ(cuCtxGetCurrent(&none), CUDA_SUCCESS);
    EXPECT_EQ(none, nullptr);
    CUdevice other = -1;
    EXPECT_EQ(cuCtxGetDevice(&other), CUDA_ERROR_INVALID_CONTEXT);
    CUdeviceptr ptr = kUntouched;
    EXPECT_EQ(cuMemAlloc(&ptr, 512), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(ptr, kUntouched);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  }).join();

  const auto made_up = reinterpret_cast<CUcontext>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuCtxSetCurrent(made_up), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxGetDevice_v2(&device, made_up), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxSynchronize_v2(made_up), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxGetCurrent(nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&again, kDevices), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxGetDevice(&device), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(Driver, TheLastReleaseDestroysWhatTheContextHolds) {
  CUdeviceptr ptr = 0;
  ASSERT_EQ(cuMemAlloc(&ptr, kMiB), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);

  // Still current, but destroyed: calls in it fail until it is retained again.
  CUdeviceptr other = kUntouched;
  EXPECT_EQ(cuMemAlloc(&other, 512), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(other, kUntouched);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT) << "not retained";
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&contexts_[0], 0), CUDA_SUCCESS);
  EXPECT_EQ(used(), 0u);
  EXPECT_EQ(cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE) << "freed with its context";
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(kDevices), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, ResetFreesTheDevicesMemoryButKeepsTheContextRetained) {
  CUdeviceptr device_memory = 0;
  CUdeviceptr managed = 0;
  CUdeviceptr async = 0;
  void* pinned = nullptr;
  ASSERT_EQ(cuMemAlloc(&device_memory, kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&managed, kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&async, kMiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocHost(&pinned, kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  CUdeviceptr on_device1 = 0;
  ASSERT_EQ(cuMemAlloc(&on_device1, kMiB), CUDA_SUCCESS);

  ASSERT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(device_memory), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(managed), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(async), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(used(), kMiB) << "device 1 was not reset";
  EXPECT_EQ(cuMemFree(on_device1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  EXPECT_EQ(used(), 0u) << "the default pool's granule went with the reset too";
  CUdeviceptr ptr = 0;
  EXPECT_EQ(cuMemAlloc(&ptr, kMiB), CUDA_SUCCESS) << "the reset context is still retained";
  EXPECT_EQ(cuDevicePrimaryCtxReset(kDevices), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, AllocatesAlignedDeviceMemoryWithinCapacity) {
  CUdeviceptr first = 0;
  ASSERT_EQ(cuMemAlloc(&first, 1), CUDA_SUCCESS);
  EXPECT_EQ(first % 512, 0u);
  EXPECT_EQ(used(), 512u);
  CUdeviceptr rest = 0;
  EXPECT_EQ(cuMemAlloc(&rest, kCapacity), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc(&rest, kCapacity - 512), CUDA_SUCCESS);
  CUdeviceptr more = kUntouched;
  EXPECT_EQ(cuMemAlloc(&more, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(more, kUntouched) << "a failed allocation writes nothing";

  std::size_t free_bytes = 1;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 0u);
  EXPECT_EQ(total_bytes, kCapacity);
  EXPECT_EQ(cuMemGetInfo(nullptr, &total_bytes), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(cuMemFree(first), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(rest), CUDA_SUCCESS);
  EXPECT_EQ(used(), 0u);
}

TEST_F(Driver, RefusesZeroBytesNullOutputsAndBadFrees) {
  CUdeviceptr ptr = kUntouched;
  EXPECT_EQ(cuMemAlloc(&ptr, 0), CUDA_ERROR_INVALID_VALUE) << "unlike cudaMalloc";
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocManaged(&ptr, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  void* host = nullptr;
  EXPECT_EQ(cuMemAllocHost(&host, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostAlloc(&host, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocAsync(&ptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(cuMemFree(0), CUDA_SUCCESS) << "NVIDIA's runtime frees 0 to make a context";
  EXPECT_EQ(cuMemFreeHost(nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemAlloc(&ptr, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(ptr + 512), CUDA_ERROR_INVALID_VALUE) << "not the start";
  EXPECT_EQ(cuMemFreeHost(host_pointer(ptr)), CUDA_ERROR_INVALID_VALUE) << "device memory";
  ASSERT_EQ(cuMemAllocHost(&host, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(device_address(host)), CUDA_ERROR_INVALID_VALUE) << "pinned memory";
  EXPECT_EQ(cuMemFree(ptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE) << "double free";
  EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(host), CUDA_ERROR_INVALID_VALUE) << "double free";
}

TEST_F(Driver, PitchIsTheWidthRoundedUpTo512) {
  CUdeviceptr ptr = 0;
  std::size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch(&ptr, &pitch, 100, 10, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 512u);
  EXPECT_EQ(used(), 512u * 10);
  ASSERT_EQ(cuMemAllocPitch(&ptr, &pitch, 513, 3, 16), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);

  pitch = 7;
  EXPECT_EQ(cuMemAllocPitch(&ptr, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE)
      << "ElementSizeBytes is 4, 8 or 16";
  EXPECT_EQ(cuMemAllocPitch(&ptr, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocPitch(&ptr, &pitch, 100, 0, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocPitch(&ptr, nullptr, 100, 1, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocPitch(&ptr, &pitch, SIZE_MAX / 2, 4, 4), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(pitch, 7u) << "a failed allocation writes nothing";
}

TEST_F(Driver, PinnedHostMemoryIsPageAlignedAndOutsideDeviceCapacity) {
  void* big = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&big, 2 * kCapacity, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % 4096, 0u);
  static_cast<char*>(big)[2 * kCapacity - 1] = 1;
  EXPECT_EQ(used(), 0u);
  for (const unsigned int flags :
       {0u, unsigned{CU_MEMHOSTALLOC_DEVICEMAP}, unsigned{CU_MEMHOSTALLOC_WRITECOMBINED}}) {
    void* ptr = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&ptr, 100, flags), CUDA_SUCCESS) << flags;
    EXPECT_EQ(cuMemFreeHost(ptr), CUDA_SUCCESS);
  }
  void* ptr = nullptr;
  EXPECT_EQ(cuMemHostAlloc(&ptr, 100, 0x8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(big), CUDA_SUCCESS);
}

TEST_F(Driver, ManagedMemoryTakesDeviceCapacityAndAttachFlags) {
  CUdeviceptr managed = 0;
  ASSERT_EQ(cuMemAllocManaged(&managed, 40 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  CUdeviceptr more = 0;
  EXPECT_EQ(cuMemAlloc(&more, 40 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  static_cast<int*>(host_pointer(managed))[10] = 42;  // host-accessible, as unified memory is
  CUdeviceptr host_attached = 0;
  EXPECT_EQ(cuMemAllocManaged(&host_attached, 512, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocManaged(&more, 512, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(managed), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(host_attached), CUDA_SUCCESS);
}

TEST_F(Driver, CopiesAndMemsetCheckTheDeviceSide) {
  std::vector<int> host(256);
  for (int i = 0; i < 256; ++i) host[i] = i * 3;
  const std::size_t bytes = host.size() * sizeof(int);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  ASSERT_EQ(cuMemAlloc(&a, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(a, host.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(b, a, bytes), CUDA_SUCCESS);
  std::vector<int> back(256, -1);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), b, bytes), CUDA_SUCCESS);
  EXPECT_EQ(back, host);
  ASSERT_EQ(cuMemsetD8(a, 0xff, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy(device_address(back.data()), a, bytes), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<int>(256, -1));

  EXPECT_EQ(cuMemcpyHtoD(device_address(back.data()), host.data(), 4), CUDA_ERROR_INVALID_VALUE)
      << "host memory as the device side";
  EXPECT_EQ(cuMemcpyHtoD(a, host.data(), bytes + 1), CUDA_ERROR_INVALID_VALUE) << "too long";
  EXPECT_EQ(cuMemsetD8(device_address(host.data()), 0, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD(0, host.data(), 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpy(a, b, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(b), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpy(device_address(back.data()), b, 4), CUDA_ERROR_INVALID_VALUE)
      << "freed device memory, even through unified addressing";
  EXPECT_EQ(cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(Driver, StreamsAreHandlesOfTheirContext) {
  const auto cuStreamSynchronize_ptsz =
      per_thread<PFN_cuStreamSynchronize_v7000_ptsz>("cuStreamSynchronize", 7000);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  for (const CUstream implicit : {CUstream{}, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    EXPECT_EQ(cuStreamSynchronize(implicit), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamSynchronize_ptsz(implicit), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE) << "implicit streams stay";
  EXPECT_EQ(cuStreamCreate(&stream, 0x4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, StreamOrderedAllocationsComeFromTheStreamsDevice) {
  const auto cuMemAllocAsync_ptsz =
      per_thread<PFN_cuMemAllocAsync_v11020_ptsz>("cuMemAllocAsync", 11020);
  const auto cuMemFreeAsync_ptsz =
      per_thread<PFN_cuMemFreeAsync_v11020_ptsz>("cuMemFreeAsync", 11020);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  CUstream on_device1 = nullptr;
  ASSERT_EQ(cuStreamCreate(&on_device1, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);

  CUdeviceptr here = 0;
  CUdeviceptr there = 0;
  CUdeviceptr per_thread = 0;
  ASSERT_EQ(cuMemAllocAsync(&here, kMiB, CU_STREAM_LEGACY), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&there, kMiB, on_device1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync_ptsz(&per_thread, kMiB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(used(), 32 * kMiB) << "two allocations in one granule of device 0's pool";

  const auto made_up = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  CUdeviceptr ptr = kUntouched;
  EXPECT_EQ(cuMemAllocAsync(&ptr, kMiB, made_up), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cuMemFreeAsync(here, made_up), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemFreeAsync(0, nullptr), CUDA_SUCCESS) << "freeing nothing";

  EXPECT_EQ(cuMemFreeAsync(here, on_device1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync_ptsz(per_thread, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(there), CUDA_SUCCESS) << "cuMemFree takes stream-ordered memory";
  EXPECT_EQ(cuMemFreeAsync(here, nullptr), CUDA_ERROR_INVALID_VALUE) << "double free";
  EXPECT_EQ(used(), 32 * kMiB) << "kept by the pool";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(used(), 0u) << "given back at the synchronization";
}

CUmemPoolProps device_pool(int device, std::size_t max_size = 0) {
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.maxSize = max_size;
  return props;
}

TEST_F(Driver, PoolsAllocateOnTheirDeviceUpToTheirMaximum) {
  const auto cuMemAllocFromPoolAsync_ptsz =
      per_thread<PFN_cuMemAllocFromPoolAsync_v11020_ptsz>("cuMemAllocFromPoolAsync", 11020);
  CUmemoryPool defaults[kDevices] = {};
  for (int device = 0; device < kDevices; ++device) {
    ASSERT_EQ(cuDeviceGetDefaultMemPool(&defaults[device], device), CUDA_SUCCESS);
  }
  EXPECT_NE(defaults[0], defaults[1]);
  EXPECT_EQ(cuDeviceGetDefaultMemPool(&defaults[0], kDevices), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuMemPoolDestroy(defaults[0]), CUDA_ERROR_INVALID_VALUE) << "default pools stay";
  EXPECT_EQ(cuMemPoolTrimTo(defaults[1], 0), CUDA_SUCCESS);

  const CUmemPoolProps props = device_pool(1, kMiB);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr first = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&first, 768 * kKiB, pool, nullptr), CUDA_SUCCESS);
  CUdeviceptr second = kUntouched;
  EXPECT_EQ(cuMemAllocFromPoolAsync_ptsz(&second, 512 * kKiB, pool, nullptr),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(second, kUntouched);
  EXPECT_EQ(used(), 0u) << "the pool's memory is on device 1";

  // Destroying a pool with live memory defers its release to its last free.
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocFromPoolAsync(&second, 512, pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeAsync(first, nullptr), CUDA_SUCCESS);

  CUmemPoolProps bad = device_pool(0);
  bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(cuMemPoolCreate(&pool, &bad), CUDA_ERROR_NOT_SUPPORTED);
  bad = device_pool(0);
  bad.reserved[3] = 1;
  EXPECT_EQ(cuMemPoolCreate(&pool, &bad), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemPoolCreate(&pool, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// The CUDA 2.0 ABIs, with 32-bit sizes and addresses, beside the current ones.
TEST_F(Driver, LegacyEntryPointsHaveThe32BitAbi) {
  using LegacyAlloc = CUresult (*)(unsigned int*, unsigned int);
  using LegacyInfo = CUresult (*)(unsigned int*, unsigned int*);
  using LegacyTotal = CUresult (*)(unsigned int*, CUdevice);
  using LegacyFree = CUresult (*)(unsigned int);
  void* alloc = nullptr;
  void* info = nullptr;
  void* total = nullptr;
  void* release = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &alloc, 3010, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGetProcAddress("cuMemGetInfo", &info, 3010, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGetProcAddress("cuDeviceTotalMem", &total, 3010, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGetProcAddress("cuMemFree", &release, 3010, 0, nullptr), CUDA_SUCCESS);

  unsigned int free_bytes = 0;
  unsigned int total_bytes = 0;
  ASSERT_EQ(reinterpret_cast<LegacyInfo>(info)(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, kCapacity);
  ASSERT_EQ(reinterpret_cast<LegacyTotal>(total)(&total_bytes, 1), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, kCapacity);
  // Simulated device memory lies above 4 GiB, out of a 32-bit address's reach, and is not
  // taken by the failed call.
  unsigned int address = 7;
  EXPECT_EQ(reinterpret_cast<LegacyAlloc>(alloc)(&address, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(address, 7u);
  EXPECT_EQ(used(), 0u);
  EXPECT_EQ(reinterpret_cast<LegacyFree>(release)(0x1000), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, NamesAndDescribesResults) {
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "out of memory");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "invalid device context");
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_NOT_FOUND, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_NOT_FOUND");
  ASSERT_EQ(cuGetErrorName(CUDA_SUCCESS, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_SUCCESS");

  // An unknown code: CUDA_ERROR_INVALID_VALUE and a null string, as documented.
  const auto bogus = static_cast<CUresult>(12345);
  text = "untouched";
  EXPECT_EQ(cuGetErrorName(bogus, &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
  text = "untouched";
  EXPECT_EQ(cuGetErrorString(bogus, &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
  EXPECT_EQ(cuGetErrorName(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// The documented simulated device (device_properties.cpp): a sample of its attributes.
TEST_F(Driver, DevicesHaveTheAttributesOfTheSimulatedGpu) {
  struct Expected {
    CUdevice_attribute attribute;
    int value;
  };
  for (int device = 0; device < kDevices; ++device) {
    for (const Expected e :
         {Expected{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
          Expected{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
          Expected{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
          Expected{CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
          Expected{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
          Expected{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
          Expected{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
          Expected{CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
          Expected{CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
          Expected{CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 * 1024 * 1024},
          Expected{CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
          Expected{CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
          Expected{CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
          Expected{CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
          Expected{CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
          Expected{CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0},
          Expected{CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
          Expected{CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0},
          Expected{CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device + 1},
          Expected{CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0}}) {
      int value = -12345;
      EXPECT_EQ(cuDeviceGetAttribute(&value, e.attribute, device), CUDA_SUCCESS) << e.attribute;
      EXPECT_EQ(value, e.value) << "attribute " << e.attribute << " of device " << device;
    }
  }
  // Every attribute of the enumeration has a value; anything else is an error that writes
  // nothing.
  for (int attribute = 1; attribute < CU_DEVICE_ATTRIBUTE_MAX; ++attribute) {
    int value = 0;
    EXPECT_EQ(cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(attribute), 0),
              CUDA_SUCCESS)
        << attribute;
  }
  int value = -12345;
  EXPECT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(0), 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(100000), 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(value, -12345);
  EXPECT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, kDevices),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, PciIdsAndUuidsNameEachDevice) {
  char id[32] = {};
  ASSERT_EQ(cuDeviceGetPCIBusId(id, sizeof id, 1), CUDA_SUCCESS);
  EXPECT_STREQ(id, "0000:02:00.0");
  for (int device = 0; device < kDevices; ++device) {
    ASSERT_EQ(cuDeviceGetPCIBusId(id, sizeof id, device), CUDA_SUCCESS);
    CUdevice found = -1;
    EXPECT_EQ(cuDeviceGetByPCIBusId(&found, id), CUDA_SUCCESS) << id;
    EXPECT_EQ(found, device) << id;
  }
  CUdevice found = -1;
  EXPECT_EQ(cuDeviceGetByPCIBusId(&found, "0000:01:00"), CUDA_SUCCESS);
  EXPECT_EQ(found, 0);
  EXPECT_EQ(cuDeviceGetByPCIBusId(&found, "02:00.0"), CUDA_SUCCESS);
  EXPECT_EQ(found, 1);
  found = -1;
  EXPECT_EQ(cuDeviceGetByPCIBusId(&found, "0000:09:00.0"), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetByPCIBusId(&found, "no bus"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(found, -1);
  char short_id[5] = {};
  EXPECT_EQ(cuDeviceGetPCIBusId(short_id, sizeof short_id, 0), CUDA_SUCCESS);
  EXPECT_STREQ(short_id, "0000") << "truncated and terminated";
  EXPECT_EQ(cuDeviceGetPCIBusId(id, sizeof id, kDevices), CUDA_ERROR_INVALID_DEVICE);

  CUuuid first = {};
  CUuuid again = {};
  CUuuid second = {};
  ASSERT_EQ(cuDeviceGetUuid(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetUuid(&again, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetUuid(&second, 1), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(first.bytes, again.bytes, sizeof first.bytes), 0) << "stable";
  EXPECT_NE(std::memcmp(first.bytes, second.bytes, sizeof first.bytes), 0) << "per device";
  void* legacy = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuDeviceGetUuid", &legacy, 9020, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(reinterpret_cast<PFN_cuDeviceGetUuid_v9020>(legacy)(&again, 1), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(second.bytes, again.bytes, sizeof second.bytes), 0);
  EXPECT_EQ(cuDeviceGetUuid(&first, kDevices), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetUuid(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, PeerAccessIsKeptPerContextPair) {
  int can = -1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0) << "a device is no peer of itself";
  EXPECT_EQ(cuDeviceCanAccessPeer(&can, 0, kDevices), CUDA_ERROR_INVALID_DEVICE);

  EXPECT_EQ(cuCtxDisablePeerAccess(contexts_[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  EXPECT_EQ(cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(cuCtxEnablePeerAccess(contexts_[0], 0), CUDA_ERROR_INVALID_DEVICE) << "itself";
  EXPECT_EQ(cuCtxEnablePeerAccess(contexts_[1], 1), CUDA_ERROR_INVALID_VALUE) << "flags";
  // Each direction is its own.
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(contexts_[0]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(contexts_[1]), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(contexts_[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  // A reset of either context ends it.
  ASSERT_EQ(cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset(1), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
  const auto made_up = reinterpret_cast<CUcontext>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuCtxEnablePeerAccess(made_up, 0), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(Driver, ContextsStackPerThread) {
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxPushCurrent(contexts_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, contexts_[1]);
  CUdevice device = -1;
  ASSERT_EQ(cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, contexts_[1]);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, contexts_[0]) << "the one below";

  // cuCtxSetCurrent replaces the top; null pops it.
  ASSERT_EQ(cuCtxPushCurrent(contexts_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, contexts_[0]);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, contexts_[0]);
  ASSERT_EQ(cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, nullptr) << "empty";
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPushCurrent(reinterpret_cast<CUcontext>(std::uintptr_t{0x1234})),
            CUDA_ERROR_INVALID_CONTEXT);

  // Another thread has a stack of its own.
  ASSERT_EQ(cuCtxPushCurrent(contexts_[0]), CUDA_SUCCESS);
  std::thread([&] {
    CUcontext theirs = contexts_[0];
    EXPECT_EQ(cuCtxGetCurrent(&theirs), CUDA_SUCCESS);
    EXPECT_EQ(theirs, nullptr);
    EXPECT_EQ(cuCtxPopCurrent(&theirs), CUDA_ERROR_INVALID_CONTEXT);
  }).join();
  unsigned int version = 0;
  EXPECT_EQ(cuCtxGetApiVersion(nullptr, &version), CUDA_SUCCESS);
  EXPECT_EQ(version, 3020u);
}

TEST_F(Driver, PrimaryContextsReportTheirStateAndFlags) {
  unsigned int flags = 99;
  int active = -1;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, 0u);
  EXPECT_EQ(active, 1);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0) << "released by all who retained it";
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&contexts_[1], 1), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);

  ASSERT_EQ(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  unsigned int context_flags = 99;
  ASSERT_EQ(cuCtxGetFlags(&context_flags), CUDA_SUCCESS);
  EXPECT_EQ(context_flags, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  EXPECT_EQ(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD),
            CUDA_ERROR_INVALID_VALUE)
      << "one scheduling mode";
  EXPECT_EQ(cuDevicePrimaryCtxSetFlags(0, 0x1000), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuDevicePrimaryCtxSetFlags(0, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxGetState(kDevices, &flags, &active), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDevicePrimaryCtxGetState(0, nullptr, &active), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, HostMemoryCanBeRegisteredOnce) {
  std::vector<char> buffer(3 * 4096);
  void* const p = buffer.data();
  ASSERT_EQ(cuMemHostRegister(p, 8192, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
            CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister(buffer.data() + 4096, 4096, 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
      << "overlaps";
  EXPECT_EQ(cuMemHostRegister(buffer.data() + 8192, 4096, CU_MEMHOSTREGISTER_READ_ONLY),
            CUDA_SUCCESS)
      << "beside it";
  CUdeviceptr device_pointer = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&device_pointer, buffer.data() + 100, 0), CUDA_SUCCESS);
  EXPECT_EQ(device_pointer, device_address(buffer.data() + 100)) << "unified addressing";
  EXPECT_EQ(cuMemHostGetDevicePointer(&device_pointer, buffer.data() + 100, 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostUnregister(buffer.data() + 8192), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(buffer.data() + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
      << "not its start";
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostGetDevicePointer(&device_pointer, p, 0), CUDA_ERROR_INVALID_VALUE);

  void* pinned = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&pinned, 4096, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister(pinned, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_EQ(cuMemHostGetDevicePointer(&device_pointer, pinned, 0), CUDA_SUCCESS);
  EXPECT_EQ(device_pointer, device_address(pinned));
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  CUdeviceptr device = 0;
  ASSERT_EQ(cuMemAlloc(&device, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister(host_pointer(device), 4096, 0), CUDA_ERROR_INVALID_VALUE)
      << "device memory";
  EXPECT_EQ(cuMemHostRegister(p, 4096, 0x10), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostRegister(p, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostRegister(nullptr, 4096, 0), CUDA_ERROR_INVALID_VALUE);
  // Registrations go with their context.
  ASSERT_EQ(cuMemHostRegister(p, 4096, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

struct Attributes {
  unsigned int memory_type = 99;
  CUdeviceptr device_pointer = 1;
  void* host_pointer = reinterpret_cast<void*>(1);
  CUcontext context = reinterpret_cast<CUcontext>(1);
  int ordinal = 99;
  unsigned int managed = 99;
  CUdeviceptr start = 1;
  std::size_t size = 1;
  unsigned int mapped = 99;
  unsigned long long buffer_id = 0;
  unsigned int handle_types = 99;
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(1);
};

// Everything cuPointerGetAttributes says about an address, in one call.
CUresult describe(CUdeviceptr ptr, Attributes* out) {
  CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_MAPPED,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                                 CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
  void* data[] = {&out->memory_type, &out->device_pointer, &out->host_pointer, &out->context,
                  &out->ordinal,     &out->managed,        &out->start,        &out->size,
                  &out->mapped,      &out->buffer_id,      &out->handle_types, &out->pool};
  return cuPointerGetAttributes(12, names, data, ptr);
}

TEST_F(Driver, PointerAttributesDescribeEachKindOfMemory) {
  CUdeviceptr device = 0;
  CUdeviceptr managed = 0;
  CUdeviceptr async = 0;
  void* pinned = nullptr;
  std::vector<char> registered(8192);
  ASSERT_EQ(cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&device, 1000), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&managed, 2000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&async, 3000, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemHostAlloc(&pinned, 4000, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemHostRegister(registered.data(), registered.size(), 0), CUDA_SUCCESS);

  struct Case {
    const char* kind;
    CUdeviceptr start;
    std::size_t size;
    unsigned int memory_type;
    bool managed;
    bool has_host_pointer;
  };
  std::vector<unsigned long long> ids;
  for (const Case& c :
       {Case{"device", device, 1000, CU_MEMORYTYPE_DEVICE, false, false},
        Case{"managed", managed, 2000, CU_MEMORYTYPE_DEVICE, true, true},
        Case{"async", async, 3000, CU_MEMORYTYPE_DEVICE, false, false},
        Case{"pinned", device_address(pinned), 4000, CU_MEMORYTYPE_HOST, false, true},
        Case{"registered", device_address(registered.data()), registered.size(), CU_MEMORYTYPE_HOST,
             false, true}}) {
    const CUdeviceptr inside = c.start + c.size - 1;
    Attributes a;
    ASSERT_EQ(describe(inside, &a), CUDA_SUCCESS) << c.kind;
    EXPECT_EQ(a.memory_type, c.memory_type) << c.kind;
    EXPECT_EQ(a.device_pointer, inside) << c.kind;
    EXPECT_EQ(a.host_pointer, c.has_host_pointer ? host_pointer(inside) : nullptr) << c.kind;
    EXPECT_EQ(a.context, contexts_[1]) << c.kind;
    EXPECT_EQ(a.ordinal, 1) << c.kind;
    EXPECT_EQ(a.managed, c.managed ? 1u : 0u) << c.kind;
    EXPECT_EQ(a.start, c.start) << c.kind;
    EXPECT_EQ(a.size, c.size) << c.kind;
    EXPECT_EQ(a.mapped, 1u) << c.kind;
    EXPECT_NE(a.buffer_id, 0u) << c.kind;
    ids.push_back(a.buffer_id);
    EXPECT_EQ(a.handle_types, 0u) << c.kind;

    // One at a time, the same; and the range.
    unsigned int memory_type = 0;
    EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside),
              CUDA_SUCCESS);
    EXPECT_EQ(memory_type, c.memory_type) << c.kind;
    void* host = nullptr;
    EXPECT_EQ(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, inside),
              c.has_host_pointer ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE)
        << c.kind;
    CUdeviceptr base = 0;
    std::size_t size = 0;
    EXPECT_EQ(cuMemGetAddressRange(&base, &size, inside), CUDA_SUCCESS) << c.kind;
    EXPECT_EQ(base, c.start) << c.kind;
    EXPECT_EQ(size, c.size) << c.kind;
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "buffer ids are unique";
  Attributes a;
  ASSERT_EQ(describe(async, &a), CUDA_SUCCESS);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 1), CUDA_SUCCESS);
  EXPECT_EQ(a.pool, pool);

  // Unknown memory: an error one at a time, zeros all together.
  int stack_variable = 0;
  const CUdeviceptr unknown = device_address(&stack_variable);
  unsigned int memory_type = 99;
  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unknown),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(describe(unknown, &a), CUDA_SUCCESS);
  EXPECT_EQ(a.memory_type, 0u);
  EXPECT_EQ(a.device_pointer, 0u);
  EXPECT_EQ(a.host_pointer, nullptr);
  EXPECT_EQ(a.context, nullptr);
  EXPECT_EQ(a.managed, 0u);
  EXPECT_EQ(a.mapped, 0u);
  EXPECT_EQ(a.buffer_id, 0u);
  CUdeviceptr base = 1;
  EXPECT_EQ(cuMemGetAddressRange(&base, nullptr, unknown), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuMemGetAddressRange(&base, nullptr, device + 1000), CUDA_ERROR_NOT_FOUND)
      << "past the requested size";
  EXPECT_EQ(base, 1u);
  EXPECT_EQ(cuPointerGetAttribute(&memory_type, static_cast<CUpointer_attribute>(999), device),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemFree(device), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device),
            CUDA_ERROR_INVALID_VALUE)
      << "freed";
}

TEST_F(Driver, PoolAttributesCountLiveAllocations) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  const auto get = [pool](CUmemPool_attribute attribute) {
    cuuint64_t value = 12345;
    EXPECT_EQ(cuMemPoolGetAttribute(pool, attribute, &value), CUDA_SUCCESS) << attribute;
    return value;
  };
  cuuint64_t threshold = 0;
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0u);
  threshold = UINT64_MAX;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), UINT64_MAX);
  int reuse = -1;
  ASSERT_EQ(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
            CUDA_SUCCESS);
  EXPECT_EQ(reuse, 1) << "the default";
  reuse = 0;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
            CUDA_SUCCESS);
  reuse = -1;
  ASSERT_EQ(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
            CUDA_SUCCESS);
  EXPECT_EQ(reuse, 0);

  // What earlier tests in this process left: trimmed, and the high water marks reset.
  cuuint64_t zero = 0;
  ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, kMiB, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&b, 1000, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kMiB + 1000) << "the bytes asked for";
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * kMiB) << "one granule";
  ASSERT_EQ(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1000u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * kMiB) << "kept by the pool";
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_HIGH), kMiB + 1000);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 32 * kMiB);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1000u) << "reset to the current amount";
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 32 * kMiB) << "reset separately";
  ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * kMiB) << "the live 1000 bytes stay";
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 32 * kMiB);
  cuuint64_t one = 1;
  EXPECT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one),
            CUDA_ERROR_INVALID_VALUE)
      << "only 0 resets";
  EXPECT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero),
            CUDA_ERROR_INVALID_VALUE)
      << "read-only";
  EXPECT_EQ(cuMemPoolGetAttribute(pool, static_cast<CUmemPool_attribute>(99), &one),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemFreeAsync(b, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  threshold = 0;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            CUDA_SUCCESS);
  reuse = 1;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
            CUDA_SUCCESS);

  // A created pool counts its own allocations only.
  const CUmemPoolProps props = device_pool(0);
  CUmemoryPool created = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&created, &props), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 4096, created, nullptr), CUDA_SUCCESS);
  cuuint64_t used_bytes = 0;
  ASSERT_EQ(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_bytes),
            CUDA_SUCCESS);
  EXPECT_EQ(used_bytes, 4096u);
  EXPECT_EQ(get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  ASSERT_EQ(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolDestroy(created), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_bytes),
            CUDA_ERROR_INVALID_VALUE);
}

// The pool's reservation as measured on a real driver (samples/gpu/pool_probe.py): 32 MiB
// granules, kept after frees, given back at a synchronization down to the release threshold or
// by cuMemPoolTrimTo, and counted as taken by cuMemGetInfo.
TEST_F(Driver, PoolsReserveInGranulesAndKeepThemUntilTrimmed) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // what earlier tests left, given back
  const auto reserved = [pool] {
    cuuint64_t value = 0;
    EXPECT_EQ(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value),
              CUDA_SUCCESS);
    return value;
  };
  const auto free_memory = [] {
    size_t free = 0;
    size_t total = 0;
    EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    return free;
  };
  ASSERT_EQ(reserved(), 0u);
  const size_t free_before = free_memory();

  // The real pool's steps: 1 byte takes a granule, 32 MiB + 1 two (the device holds 64 MiB).
  CUdeviceptr ptr = 0;
  for (const auto& [size, granules] :
       std::vector<std::pair<size_t, cuuint64_t>>{{1, 1}, {32 * kMiB + 1, 2}}) {
    ASSERT_EQ(cuMemAllocAsync(&ptr, size, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(reserved(), granules * 32 * kMiB) << size;
    EXPECT_EQ(free_before - free_memory(), granules * 32 * kMiB) << "the pool's memory is taken";
    ASSERT_EQ(cuMemFreeAsync(ptr, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(reserved(), granules * 32 * kMiB) << "kept after the free";
  }
  // Allocations that fit in what the pool holds take nothing more.
  CUdeviceptr small[3] = {};
  for (CUdeviceptr& p : small) ASSERT_EQ(cuMemAllocAsync(&p, 20 * kMiB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 64 * kMiB);

  // At a synchronization the default threshold (0) gives back all but what is in use.
  ASSERT_EQ(cuMemFreeAsync(small[2], nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(small[1], nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 64 * kMiB) << "until a synchronization";
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 32 * kMiB) << "20 MiB live: one granule";

  // PyTorch's threshold: nothing is given back at synchronizations, only by cuMemPoolTrimTo.
  cuuint64_t threshold = UINT64_MAX;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(small[0], nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 32 * kMiB);
  ASSERT_EQ(cuMemPoolTrimTo(pool, SIZE_MAX), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 32 * kMiB) << "keeping more than it holds keeps all";
  ASSERT_EQ(cuMemPoolTrimTo(pool, 1), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 32 * kMiB) << "at least the bytes to keep, in granules";
  ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 0u);
  EXPECT_EQ(free_memory(), free_before);

  // Near full, a pool that cannot take a whole granule takes what the allocation needs.
  CUdeviceptr filler = 0;
  ASSERT_EQ(cuMemAlloc(&filler, 48 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&ptr, 10 * kMiB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(), 10 * kMiB);
  ASSERT_EQ(cuMemFreeAsync(ptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(filler), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  threshold = 0;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            CUDA_SUCCESS);
}

TEST_F(Driver, PoolAccessIsKeptPerDevice) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  const auto access_of = [pool](int device) {
    CUmemLocation location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    CUmemAccess_flags flags = static_cast<CUmemAccess_flags>(99);
    EXPECT_EQ(cuMemPoolGetAccess(&flags, pool, &location), CUDA_SUCCESS);
    return flags;
  };
  EXPECT_EQ(access_of(0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "its own device";
  EXPECT_EQ(access_of(1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ASSERT_EQ(cuMemPoolSetAccess(pool, &desc, 1), CUDA_SUCCESS);
  EXPECT_EQ(access_of(1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ASSERT_EQ(cuMemPoolSetAccess(pool, &desc, 1), CUDA_SUCCESS);
  EXPECT_EQ(access_of(1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  desc.location.id = 0;
  EXPECT_EQ(cuMemPoolSetAccess(pool, &desc, 1), CUDA_ERROR_INVALID_DEVICE)
      << "its own device keeps read-write access";
  desc.location.id = kDevices;
  EXPECT_EQ(cuMemPoolSetAccess(pool, &desc, 1), CUDA_ERROR_INVALID_DEVICE);
  CUmemLocation location = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  EXPECT_EQ(cuMemPoolGetAccess(&flags, pool, &location), CUDA_ERROR_INVALID_VALUE);
}

// The entry points that exist only so that libraries importing them load: the linker and tensor
// maps. (Modules, kernels and launches: driver_modules_test.cpp; graphs: driver_capture_test.cpp.)
TEST_F(Driver, TheLinkerAndTensorMapsAreNotSupported) {
  CUlinkState link = reinterpret_cast<CUlinkState>(std::uintptr_t{1});
  EXPECT_EQ(cuLinkCreate(0, nullptr, nullptr, &link), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(link, reinterpret_cast<CUlinkState>(std::uintptr_t{1})) << "no output written";
  EXPECT_EQ(cuLinkAddData(link, CU_JIT_INPUT_PTX, nullptr, 0, "x", 0, nullptr, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  void* cubin = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(cuLinkComplete(link, &cubin, &size), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuLinkDestroy(link), CUDA_ERROR_NOT_SUPPORTED);
  CUtensorMap map;
  EXPECT_EQ(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, nullptr, nullptr,
                                   nullptr, nullptr, nullptr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace

int main(int argc, char** argv) {
  ask_before_init();
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
