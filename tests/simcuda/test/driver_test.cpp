// The simulated CUDA driver through its public API (cuda.h), on a machine of two 64 MiB
// devices: initialisation, devices, contexts, memory, streams, pools, copies and errors. The
// virtual memory API has its own test (driver_vmm_test.cpp), and so has cuGetProcAddress
// (proc_address_test.cpp).

#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "machine_main.h"

namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kCapacity = 64 * kMiB;
constexpr int kDevices = 2;

// A value no call returns, to see whether a failing call wrote its output.
constexpr CUdeviceptr kUntouched = 0xdeadbe00;

void* host_pointer(CUdeviceptr address) {
  return reinterpret_cast<void*>(address);
}

CUdeviceptr device_address(const void* ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

// The per-thread-default-stream variant of an API, as a program built without
// CUDA_API_PER_THREAD_DEFAULT_STREAM reaches it (the header declares the _ptsz names only with).
template <class Function>
Function per_thread(const char* api, int version) {
  void* function = nullptr;
  EXPECT_EQ(cuGetProcAddress(api, &function, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                             nullptr),
            CUDA_SUCCESS);
  return reinterpret_cast<Function>(function);
}

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

  EXPECT_EQ(cuMemFree(0), CUDA_ERROR_INVALID_VALUE) << "unlike cudaFree";
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
  EXPECT_EQ(used(), 2 * kMiB);

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
  EXPECT_EQ(used(), 0u);
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

}  // namespace

int main(int argc, char** argv) {
  ask_before_init();
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
