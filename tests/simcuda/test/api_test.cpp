// The simulated CUDA runtime through its public API, on a machine of two 64 MiB devices.
// Built twice: against libcudart.so.13 and libcudart.so.12.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "machine_main.h"

namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kCapacity = 64 * kMiB;
constexpr int kDevices = 2;

std::uintptr_t address(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

// A pointer value no allocation returns, to see whether a failing call wrote its output.
void* const kUntouched = reinterpret_cast<void*>(std::uintptr_t{0xdeadbe00});

std::size_t used_on_current_device() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  return total_bytes - free_bytes;
}

// Every test starts on device 0 with empty devices and no pending error, and leaves the
// machine that way, so the tests also pass when run in one process.
class SimCuda : public testing::Test {
 protected:
  void SetUp() override {
    for (int device = 0; device < kDevices; ++device) {
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      ASSERT_EQ(used_on_current_device(), 0u) << "device " << device << " is not empty";
    }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaGetLastError();
  }

  void TearDown() override {
    for (int device = 0; device < kDevices; ++device) {
      cudaSetDevice(device);
      cudaDeviceReset();
    }
    cudaSetDevice(0);
    cudaGetLastError();
  }
};

TEST_F(SimCuda, ReportsVersions) {
  int runtime = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(runtime, SIMCUDA_EXPECTED_RUNTIME_VERSION);
  int driver = 0;
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(driver, 13000);
  EXPECT_EQ(cudaRuntimeGetVersion(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDriverGetVersion(nullptr), cudaErrorInvalidValue);
}

TEST_F(SimCuda, CurrentDeviceIsPerThreadAndValidated) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, kDevices);

  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(kDevices), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1) << "a failed cudaSetDevice must not change the current device";

  int other_thread_device = -1;
  std::thread([&] { cudaGetDevice(&other_thread_device); }).join();
  EXPECT_EQ(other_thread_device, 0);
  EXPECT_EQ(cudaGetDevice(nullptr), cudaErrorInvalidValue);
}

TEST_F(SimCuda, AllocationsAre512ByteAligned) {
  for (const std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{511},
                                 std::size_t{512}, std::size_t{513}, 4 * kKiB + 3, kMiB + 1}) {
    void* ptr = nullptr;
    ASSERT_EQ(cudaMalloc(&ptr, size), cudaSuccess);
    EXPECT_EQ(address(ptr) % 512, 0u) << "size " << size;
  }
}

TEST_F(SimCuda, SizesAreRoundedUpTo512) {
  void* first = nullptr;
  ASSERT_EQ(cudaMalloc(&first, 1), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 512u);
  void* second = nullptr;
  ASSERT_EQ(cudaMalloc(&second, 513), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 512u + 1024u);
  // From an empty arena the allocator packs allocations: a 1-byte allocation takes 512 bytes.
  EXPECT_EQ(address(second), address(first) + 512);
}

TEST_F(SimCuda, ZeroByteAllocationsSucceedWithNull) {
  void* ptr = kUntouched;
  EXPECT_EQ(cudaMalloc(&ptr, 0), cudaSuccess);
  EXPECT_EQ(ptr, nullptr);
  ptr = kUntouched;
  EXPECT_EQ(cudaMallocHost(&ptr, 0), cudaSuccess);
  EXPECT_EQ(ptr, nullptr);
  ptr = kUntouched;
  EXPECT_EQ(cudaMallocAsync(&ptr, 0, nullptr), cudaSuccess);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(used_on_current_device(), 0u);
  // The one documented exception.
  ptr = kUntouched;
  EXPECT_EQ(cudaMallocManaged(&ptr, 0), cudaErrorInvalidValue);
  EXPECT_EQ(ptr, kUntouched);
}

TEST_F(SimCuda, NullOutputPointersAreInvalid) {
  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocManaged(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocHost(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocAsync(nullptr, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemGetInfo(nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(used_on_current_device(), 0u);
}

TEST_F(SimCuda, OutOfMemoryFailsAndStaysAsLastErrorUntilRead) {
  void* first = nullptr;
  ASSERT_EQ(cudaMalloc(&first, 40 * kMiB), cudaSuccess);
  void* second = kUntouched;
  EXPECT_EQ(cudaMalloc(&second, 40 * kMiB), cudaErrorMemoryAllocation);
  EXPECT_EQ(second, kUntouched) << "a failed cudaMalloc must not write *devPtr";
  EXPECT_EQ(used_on_current_device(), 40 * kMiB);

  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation) << "peeking must not clear";
  void* small = nullptr;
  ASSERT_EQ(cudaMalloc(&small, kMiB), cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation) << "success must not clear";
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(SimCuda, CapacityIsExactlyTheConfiguredSize) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_EQ(total_bytes, kCapacity);
  EXPECT_EQ(free_bytes, kCapacity);

  void* all = nullptr;
  ASSERT_EQ(cudaMalloc(&all, kCapacity), cudaSuccess);
  void* one_more = nullptr;
  EXPECT_EQ(cudaMalloc(&one_more, 1), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaFree(all), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&one_more, 1), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&all, kCapacity), cudaErrorMemoryAllocation);
}

TEST_F(SimCuda, LastErrorIsPerThread) {
  std::thread([] {
    void* ptr = nullptr;
    EXPECT_EQ(cudaMalloc(&ptr, 2 * kCapacity), cudaErrorMemoryAllocation);
    EXPECT_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  }).join();
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST_F(SimCuda, FreedNeighboursCoalesce) {
  // Fill the device with four quarters, free the second, then its neighbours.
  void* quarter[4] = {};
  for (void*& ptr : quarter) ASSERT_EQ(cudaMalloc(&ptr, kCapacity / 4), cudaSuccess);
  ASSERT_EQ(cudaFree(quarter[1]), cudaSuccess);
  void* big = nullptr;
  EXPECT_EQ(cudaMalloc(&big, kCapacity / 2), cudaErrorMemoryAllocation) << "only a quarter is free";
  ASSERT_EQ(cudaFree(quarter[0]), cudaSuccess);
  ASSERT_EQ(cudaFree(quarter[2]), cudaSuccess);
  // Only a merged range of three quarters can hold this.
  ASSERT_EQ(cudaMalloc(&big, 3 * kCapacity / 4), cudaSuccess);
  EXPECT_EQ(big, quarter[0]);
}

TEST_F(SimCuda, BestFitPrefersTheSmallestHole) {
  void* blocks[5] = {};
  const std::size_t sizes[5] = {4 * kMiB, 512, 2 * kMiB, 512, kMiB};
  for (int i = 0; i < 5; ++i) ASSERT_EQ(cudaMalloc(&blocks[i], sizes[i]), cudaSuccess);
  ASSERT_EQ(cudaFree(blocks[0]), cudaSuccess);  // a 4 MiB hole
  ASSERT_EQ(cudaFree(blocks[2]), cudaSuccess);  // a 2 MiB hole
  void* ptr = nullptr;
  ASSERT_EQ(cudaMalloc(&ptr, 2 * kMiB), cudaSuccess);
  EXPECT_EQ(ptr, blocks[2]);
}

TEST_F(SimCuda, FreeingKeepsTheBytesOfNeighboursInTheSamePage) {
  // 512-byte allocations share pages; giving pages back must not zero the survivors, whether
  // they lie before or after the freed range.
  char* first = nullptr;
  char* second = nullptr;
  ASSERT_EQ(cudaMalloc(&first, 512), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&second, 512), cudaSuccess);
  ASSERT_EQ(cudaMemset(first, 0x5a, 512), cudaSuccess);
  ASSERT_EQ(cudaFree(second), cudaSuccess);  // joins the free rest of the device
  for (int i = 0; i < 512; ++i) ASSERT_EQ(first[i], 0x5a) << "byte " << i;

  ASSERT_EQ(cudaMalloc(&second, 512), cudaSuccess);
  ASSERT_EQ(cudaMemset(second, 0x3c, 512), cudaSuccess);
  ASSERT_EQ(cudaFree(first), cudaSuccess);
  for (int i = 0; i < 512; ++i) ASSERT_EQ(second[i], 0x3c) << "byte " << i;
}

TEST_F(SimCuda, FreedPagesAreGivenBack) {
  // Anonymous pages dropped with MADV_DONTNEED read as zero when touched again.
  unsigned char* ptr = nullptr;
  ASSERT_EQ(cudaMalloc(&ptr, kMiB), cudaSuccess);
  ASSERT_EQ(cudaMemset(ptr, 0xab, kMiB), cudaSuccess);
  ASSERT_EQ(cudaFree(ptr), cudaSuccess);
  unsigned char* again = nullptr;
  ASSERT_EQ(cudaMalloc(&again, kMiB), cudaSuccess);
  ASSERT_EQ(again, ptr);
  for (std::size_t i = 0; i < kMiB; i += 997) ASSERT_EQ(again[i], 0) << "byte " << i;
}

TEST_F(SimCuda, MallocPitchRoundsTheWidthTo512) {
  void* ptr = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&ptr, &pitch, 100, 10), cudaSuccess);
  EXPECT_EQ(pitch, 512u);
  EXPECT_EQ(used_on_current_device(), 512u * 10);
  EXPECT_EQ(cudaMemset(ptr, 1, pitch * 10), cudaSuccess);
  EXPECT_EQ(cudaMemset(ptr, 1, pitch * 10 + 1), cudaErrorInvalidValue);

  ASSERT_EQ(cudaMallocPitch(&ptr, &pitch, 512, 3), cudaSuccess);
  EXPECT_EQ(pitch, 512u);
  ASSERT_EQ(cudaMallocPitch(&ptr, &pitch, 513, 3), cudaSuccess);
  EXPECT_EQ(pitch, 1024u);

  pitch = 7;
  ptr = kUntouched;
  EXPECT_EQ(cudaMallocPitch(&ptr, &pitch, std::numeric_limits<std::size_t>::max() / 2, 4),
            cudaErrorMemoryAllocation);
  EXPECT_EQ(pitch, 7u);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cudaMallocPitch(&ptr, nullptr, 1, 1), cudaErrorInvalidValue);
}

TEST_F(SimCuda, Malloc3DFillsThePitchedPointer) {
  cudaPitchedPtr pitched{};
  ASSERT_EQ(cudaMalloc3D(&pitched, make_cudaExtent(700, 3, 4)), cudaSuccess);
  EXPECT_NE(pitched.ptr, nullptr);
  EXPECT_EQ(address(pitched.ptr) % 512, 0u);
  EXPECT_EQ(pitched.pitch, 1024u);
  EXPECT_EQ(pitched.xsize, 700u);
  EXPECT_EQ(pitched.ysize, 3u);
  EXPECT_EQ(used_on_current_device(), 1024u * 3 * 4);
  EXPECT_EQ(cudaMemset(pitched.ptr, 0, 1024 * 3 * 4), cudaSuccess);
  EXPECT_EQ(cudaFree(pitched.ptr), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);

  const std::size_t huge = std::size_t{1} << 40;
  EXPECT_EQ(cudaMalloc3D(&pitched, make_cudaExtent(512, huge, huge)), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc3D(nullptr, make_cudaExtent(1, 1, 1)), cudaErrorInvalidValue);
}

TEST_F(SimCuda, ManagedMemorySharesDeviceCapacityAndIsHostReadable) {
  int* values = nullptr;
  ASSERT_EQ(cudaMallocManaged(&values, 40 * kMiB), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 40 * kMiB);
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, 40 * kMiB), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaMemset(values, 0, 1024 * sizeof(int)), cudaSuccess);
  values[1023] = 42;  // written by the host, as unified memory allows
  EXPECT_EQ(values[1023], 42);

  void* attached = nullptr;
  EXPECT_EQ(cudaMallocManaged(&attached, 4096, cudaMemAttachHost), cudaSuccess);
  EXPECT_EQ(cudaMallocManaged(&attached, 4096, cudaMemAttachSingle), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(values), cudaSuccess);
  EXPECT_EQ(cudaFree(attached), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
}

TEST_F(SimCuda, CopiesRoundTripThroughDeviceMemory) {
  std::vector<int> host(1000);
  for (int i = 0; i < 1000; ++i) host[i] = i * 7;
  const std::size_t bytes = host.size() * sizeof(int);
  int* a = nullptr;
  int* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
  std::vector<int> back(1000, -1);
  ASSERT_EQ(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);

  ASSERT_EQ(cudaMemset(a, 0xff, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), a, bytes, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(back, std::vector<int>(1000, -1));
  ASSERT_EQ(cudaMemcpy_ptds(back.data(), b, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(cudaMemset_ptds(a, 0, bytes), cudaSuccess);
}

TEST_F(SimCuda, CopiesAndMemsetRejectWhatIsNotLiveDeviceMemory) {
  std::vector<char> host(4096);
  char* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1000), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 1000, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 1, 1, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue)
      << "host memory as the destination of a host-to-device copy";
  EXPECT_EQ(cudaMemcpy(device, host.data(), 1001, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "past the requested size";
  EXPECT_EQ(cudaMemset(host.data(), 0, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(device + 500, 0, 500), cudaSuccess);
  EXPECT_EQ(cudaMemset(device, 0, 0), cudaSuccess);

  ASSERT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaMemset(device, 0, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 16, cudaMemcpyDefault), cudaErrorInvalidValue)
      << "freed device memory, even with cudaMemcpyDefault";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(SimCuda, InvalidAndDoubleFreesAreRejected) {
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(nullptr), cudaSuccess);

  char* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 4096), cudaSuccess);
  EXPECT_EQ(cudaFree(device + 512), cudaErrorInvalidValue) << "not the start";
  int on_stack = 0;
  EXPECT_EQ(cudaFree(&on_stack), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(device), cudaErrorInvalidValue) << "device memory to cudaFreeHost";

  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  EXPECT_EQ(cudaFree(pinned), cudaErrorInvalidValue) << "pinned memory to cudaFree";

  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(used_on_current_device(), 0u);
}

TEST_F(SimCuda, PinnedHostMemoryIsPageAlignedAndOutsideDeviceCapacity) {
  // Larger than a device: pinned memory is host memory.
  char* big = nullptr;
  ASSERT_EQ(cudaMallocHost(&big, 2 * kCapacity), cudaSuccess);
  EXPECT_EQ(address(big) % 4096, 0u);
  big[0] = 1;
  big[2 * kCapacity - 1] = 2;
  EXPECT_EQ(used_on_current_device(), 0u);

  for (const unsigned int flags :
       {cudaHostAllocDefault, cudaHostAllocPortable, cudaHostAllocMapped,
        cudaHostAllocWriteCombined, cudaHostAllocPortable | cudaHostAllocMapped}) {
    void* ptr = nullptr;
    ASSERT_EQ(cudaHostAlloc(&ptr, 100, flags), cudaSuccess) << "flags " << flags;
    EXPECT_EQ(cudaFreeHost(ptr), cudaSuccess);
  }
  void* ptr = kUntouched;
  EXPECT_EQ(cudaHostAlloc(&ptr, 100, 0x100), cudaErrorInvalidValue);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cudaFreeHost(big), cudaSuccess);
}

TEST_F(SimCuda, StreamOrderedAllocationsUseTheDefaultPool) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<void*> pointers;
  for (const cudaStream_t s : {cudaStream_t{}, cudaStreamLegacy, cudaStreamPerThread, stream}) {
    void* ptr = nullptr;
    ASSERT_EQ(cudaMallocAsync(&ptr, kMiB, s), cudaSuccess);
    pointers.push_back(ptr);
  }
  void* ptsz = nullptr;
  ASSERT_EQ(cudaMallocAsync_ptsz(&ptsz, kMiB, nullptr), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 32 * kMiB) << "one granule of the pool";

  // Async memory shares the device's capacity with cudaMalloc.
  void* too_much = nullptr;
  EXPECT_EQ(cudaMalloc(&too_much, kCapacity - 16 * kMiB), cudaErrorMemoryAllocation);

  for (void* ptr : pointers) EXPECT_EQ(cudaFreeAsync(ptr, stream), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync_ptsz(ptsz, cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(pointers[0], stream), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
}

TEST_F(SimCuda, FreeAsyncAndFreeTakeEachOthersMemory) {
  void* from_malloc = nullptr;
  void* from_async = nullptr;
  ASSERT_EQ(cudaMalloc(&from_malloc, kMiB), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&from_async, kMiB, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(from_malloc, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFree(from_async), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 32 * kMiB) << "the pool keeps its granule";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
}

TEST_F(SimCuda, UnknownStreamsAreInvalidResourceHandles) {
  const auto made_up = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1234});
  void* ptr = kUntouched;
  EXPECT_EQ(cudaMallocAsync(&ptr, 64, made_up), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cudaStreamSynchronize(made_up), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize_ptsz(made_up), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(made_up), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&ptr, 64, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle) << "destroyed";
  EXPECT_EQ(cudaFreeAsync(ptr, stream), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFreeAsync(ptr, cudaStreamPerThread), cudaSuccess);

  EXPECT_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, 0x4), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorInvalidValue);
}

cudaMemPoolProps device_pool_props(int device, std::size_t max_size = 0) {
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  props.maxSize = max_size;
  return props;
}

TEST_F(SimCuda, EachDeviceHasItsOwnDefaultPool) {
  cudaMemPool_t pools[kDevices] = {};
  for (int device = 0; device < kDevices; ++device) {
    ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pools[device], device), cudaSuccess);
    EXPECT_NE(pools[device], nullptr);
  }
  EXPECT_NE(pools[0], pools[1]);
  EXPECT_EQ(cudaMemPoolTrimTo(pools[0], 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pools[0]), cudaErrorInvalidValue) << "default pools stay";
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, kDevices), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(nullptr, 0), cudaErrorInvalidValue);

  // Allocating from device 1's default pool takes device 1's memory, whatever is current.
  void* ptr = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&ptr, kMiB, pools[1], nullptr), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 32 * kMiB) << "one granule of device 1's pool";
  EXPECT_EQ(cudaFreeAsync(ptr, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(SimCuda, CreatedPoolsAllocateOnTheirDeviceUpToTheirMaximum) {
  const cudaMemPoolProps props = device_pool_props(1, kMiB);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  void* first = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&first, 768 * kKiB, pool, cudaStreamPerThread), cudaSuccess);
  void* second = kUntouched;
  EXPECT_EQ(cudaMallocFromPoolAsync(&second, 512 * kKiB, pool, nullptr), cudaErrorMemoryAllocation);
  EXPECT_EQ(second, kUntouched);
  ASSERT_EQ(cudaMallocFromPoolAsync_ptsz(&second, 256 * kKiB, pool, nullptr), cudaSuccess);
  // The C++ overload of cudaMallocAsync that takes a pool.
  float* third = nullptr;
  EXPECT_EQ(cudaMallocAsync(&third, 512, pool, nullptr), cudaErrorMemoryAllocation);

  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), kMiB);
  EXPECT_EQ(cudaFreeAsync(first, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(second, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
}

TEST_F(SimCuda, DestroyingAPoolWithLiveAllocationsDefersItsRelease) {
  const cudaMemPoolProps props = device_pool_props(0);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  void* live = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&live, kMiB, pool, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);

  // The handle is gone at once; the allocation stays usable until it is freed.
  void* ptr = kUntouched;
  EXPECT_EQ(cudaMallocFromPoolAsync(&ptr, kMiB, pool, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(live, 0, kMiB), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 32 * kMiB) << "the pool's granule";
  EXPECT_EQ(cudaFreeAsync(live, nullptr), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u) << "the pool went with its last allocation";
}

TEST_F(SimCuda, PoolPropertiesAreValidated) {
  cudaMemPool_t pool = nullptr;
  cudaMemPoolProps props = device_pool_props(0);
  EXPECT_EQ(cudaMemPoolCreate(&pool, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolCreate(nullptr, &props), cudaErrorInvalidValue);

  props = device_pool_props(kDevices);
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidValue) << "no such device";
  props = device_pool_props(0);
  props.allocType = cudaMemAllocationTypeInvalid;
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidValue);
  props = device_pool_props(0);
  props.reserved[10] = 1;
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidValue) << "reserved must be 0";
  props = device_pool_props(0);
  props.location.type = cudaMemLocationTypeHost;
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaErrorNotSupported);
  props = device_pool_props(0);
  props.handleTypes = cudaMemHandleTypeWin32;
  EXPECT_EQ(cudaMemPoolCreate(&pool, &props), cudaErrorNotSupported);
  props = device_pool_props(0);
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
}

TEST_F(SimCuda, DevicesHaveIndependentCapacity) {
  void* full0 = nullptr;
  ASSERT_EQ(cudaMalloc(&full0, kCapacity), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
  void* full1 = nullptr;
  ASSERT_EQ(cudaMalloc(&full1, kCapacity), cudaSuccess);
  void* more = nullptr;
  EXPECT_EQ(cudaMalloc(&more, 1), cudaErrorMemoryAllocation);

  // Memory of another device can be freed from here, as with unified addressing.
  EXPECT_EQ(cudaFree(full0), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), kCapacity);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
  EXPECT_EQ(cudaFree(full1), cudaSuccess);
}

TEST_F(SimCuda, DeviceResetReleasesOnlyTheCurrentDevice) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* on_device1 = nullptr;
  ASSERT_EQ(cudaMalloc(&on_device1, kMiB), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);

  void* device = nullptr;
  void* managed = nullptr;
  void* async = nullptr;
  void* pinned = nullptr;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  const cudaMemPoolProps props = device_pool_props(0);
  ASSERT_EQ(cudaMalloc(&device, kMiB), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, kMiB), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&async, kMiB, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, kMiB), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);

  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), 0u);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(managed), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeAsync(async, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(pinned), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaErrorInvalidValue);
  cudaMemPool_t default_pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&default_pool, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolTrimTo(default_pool, 0), cudaSuccess);

  EXPECT_EQ(cudaFree(on_device1), cudaSuccess) << "device 1 was not reset";
}

TEST_F(SimCuda, ConcurrentAllocationsNeverOverlap) {
  // Eight threads on both devices allocate, fill their memory with a tag, check it, and free.
  // Overlapping allocations would show up as another thread's tag.
  constexpr int kThreads = 8;
  constexpr int kRounds = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      if (cudaSetDevice(t % kDevices) != cudaSuccess) ++failures;
      std::mt19937 rng(static_cast<unsigned>(t));
      // Mostly small sizes, so that threads spend their time in the allocator.
      std::uniform_int_distribution<std::size_t> size_of(1, 16 * kKiB);
      std::vector<std::pair<unsigned char*, std::size_t>> live;
      const auto tag = static_cast<unsigned char>(t + 1);
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t size = size_of(rng);
        void* ptr = nullptr;
        const cudaError_t error =
            (round % 3 == 0) ? cudaMallocAsync(&ptr, size, nullptr) : cudaMalloc(&ptr, size);
        if (error != cudaSuccess || cudaMemset(ptr, tag, size) != cudaSuccess) {
          ++failures;
          continue;
        }
        live.emplace_back(static_cast<unsigned char*>(ptr), size);
        if (live.size() > 8 || round % 5 == 0) {
          const auto [victim, victim_size] = live[rng() % live.size()];
          for (std::size_t i = 0; i < victim_size; i += 61) {
            if (victim[i] != tag) ++failures;
          }
          if (cudaFree(victim) != cudaSuccess) ++failures;
          std::erase(live, std::make_pair(victim, victim_size));
        }
      }
      for (const auto& [ptr, size] : live) {
        if (cudaFree(ptr) != cudaSuccess) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (int device = 0; device < kDevices; ++device) {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the pools give their granules back
    EXPECT_EQ(used_on_current_device(), 0u) << "device " << device;
  }
}

TEST_F(SimCuda, NamesAndDescribesErrors) {
  EXPECT_STREQ(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  EXPECT_STREQ(cudaGetErrorString(cudaSuccess), "no error");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidResourceHandle), "invalid resource handle");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorApiFailureBase), "cudaErrorApiFailureBase");
  const auto bogus = static_cast<cudaError_t>(12345);
  EXPECT_STREQ(cudaGetErrorName(bogus), "unrecognized error code");
  EXPECT_STREQ(cudaGetErrorString(bogus), "unrecognized error code");
}

TEST_F(SimCuda, TypedOverloadsOfCudaRuntimeH) {
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 100 * sizeof(float)), cudaSuccess);
  double* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 8 * sizeof(double)), cudaSuccess);
  int* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 16 * sizeof(int)), cudaSuccess);
  char* mapped = nullptr;
  ASSERT_EQ(cudaHostAlloc(&mapped, 16, cudaHostAllocMapped), cudaSuccess);
  short* rows = nullptr;
  std::size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&rows, &pitch, 10 * sizeof(short), 4), cudaSuccess);
  long* async = nullptr;
  ASSERT_EQ(cudaMallocAsync(&async, 64, cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(mapped), cudaSuccess);
  EXPECT_EQ(cudaFree(rows), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(async, cudaStreamPerThread), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
