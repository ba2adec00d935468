// The simulated driver's virtual memory API (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree), on a machine of two 64 MiB
// devices: what it does, what it refuses, and how it shares device capacity with cuMemAlloc.

#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "machine_main.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGranule = 2 * kMiB;
constexpr std::size_t kCapacity = 64 * kMiB;
constexpr int kDevices = 2;
constexpr CUdeviceptr kUntouchedAddress = 0xdeadbe00;
constexpr CUmemGenericAllocationHandle kUntouchedHandle = 0xdeadbeef;

CUmemAllocationProp device_memory(int device) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUmemAccessDesc access(int device, CUmemAccess_flags flags) {
  CUmemAccessDesc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = device;
  desc.flags = flags;
  return desc;
}

unsigned char* bytes(CUdeviceptr address) {
  return reinterpret_cast<unsigned char*>(address);
}

// Every test starts initialised with device 0's context current, both devices empty, and
// leaves them so: what a test maps it unmaps, what it creates it releases.
class Vmm : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
    ASSERT_EQ(used(0), 0u);
    ASSERT_EQ(used(1), 0u);
  }

  void TearDown() override {
    EXPECT_EQ(used(0), 0u) << "the test left memory on device 0";
    EXPECT_EQ(used(1), 0u) << "the test left memory on device 1";
    cuDevicePrimaryCtxRelease(0);
    cuCtxSetCurrent(nullptr);
  }

  // Bytes taken of a device's capacity.
  static std::size_t used(int device) {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    CUcontext context = nullptr;
    cuDevicePrimaryCtxRetain(&context, device);
    CUcontext previous = nullptr;
    cuCtxGetCurrent(&previous);
    cuCtxSetCurrent(context);
    EXPECT_EQ(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
    cuCtxSetCurrent(previous);
    cuDevicePrimaryCtxRelease(device);
    return total_bytes - free_bytes;
  }

  static CUdeviceptr reserve(std::size_t size, std::size_t alignment = 0, CUdeviceptr hint = 0) {
    CUdeviceptr ptr = 0;
    EXPECT_EQ(cuMemAddressReserve(&ptr, size, alignment, hint, 0), CUDA_SUCCESS);
    return ptr;
  }

  static CUmemGenericAllocationHandle create(std::size_t size, int device = 0) {
    CUmemGenericAllocationHandle handle = 0;
    const CUmemAllocationProp prop = device_memory(device);
    EXPECT_EQ(cuMemCreate(&handle, size, &prop, 0), CUDA_SUCCESS);
    return handle;
  }

  static void grant(CUdeviceptr ptr, std::size_t size, CUmemAccess_flags flags) {
    const CUmemAccessDesc desc = access(0, flags);
    ASSERT_EQ(cuMemSetAccess(ptr, size, &desc, 1), CUDA_SUCCESS);
  }

  CUcontext context_ = nullptr;
};

TEST_F(Vmm, GranularityIsTwoMebibytes) {
  const CUmemAllocationProp prop = device_memory(1);
  std::size_t granularity = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranule);
  ASSERT_EQ(
      cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranule);

  const auto option = static_cast<CUmemAllocationGranularity_flags>(2);
  EXPECT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, option), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemGetAllocationGranularity(&granularity, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);
  CUmemAllocationProp bad = device_memory(kDevices);
  EXPECT_EQ(cuMemGetAllocationGranularity(&granularity, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Vmm, CreateChecksItsProperties) {
  CUmemGenericAllocationHandle handle = kUntouchedHandle;
  CUmemAllocationProp prop = device_memory(0);
  EXPECT_EQ(cuMemCreate(&handle, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemCreate(&handle, kGranule + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE)
      << "not a multiple of the granularity";
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 1), CUDA_ERROR_INVALID_VALUE) << "flags";
  EXPECT_EQ(cuMemCreate(nullptr, kGranule, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemCreate(&handle, kGranule, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  prop.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop = device_memory(kDevices);
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop = device_memory(0);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop = device_memory(0);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop = device_memory(0);
  prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(0x10);
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop = device_memory(0);
  prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(handle, kUntouchedHandle) << "a failed cuMemCreate writes nothing";
  EXPECT_EQ(used(0), 0u);

  // A POSIX file descriptor handle type is fine; compressible memory is granted as plain.
  prop = device_memory(1);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(used(1), kGranule);
  CUmemAllocationProp granted;
  std::memset(&granted, 0xff, sizeof granted);
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&granted, handle), CUDA_SUCCESS);
  EXPECT_EQ(granted.type, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(granted.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(granted.location.id, 1);
  EXPECT_EQ(granted.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_EQ(granted.allocFlags.compressionType, CU_MEM_ALLOCATION_COMP_NONE);
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(nullptr, handle), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(&granted, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE) << "double release";
  EXPECT_EQ(cuMemRelease(kUntouchedHandle), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Vmm, PhysicalMemorySharesTheDeviceCapacityWithCuMemAlloc) {
  std::vector<CUmemGenericAllocationHandle> handles;
  for (std::size_t i = 0; i < kCapacity / kGranule; ++i) handles.push_back(create(kGranule));
  EXPECT_EQ(used(0), kCapacity);
  CUmemGenericAllocationHandle one_more = kUntouchedHandle;
  const CUmemAllocationProp prop = device_memory(0);
  EXPECT_EQ(cuMemCreate(&one_more, kGranule, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(one_more, kUntouchedHandle);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(cuMemAlloc(&ptr, 512), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(used(1), 0u) << "device 1 has its own capacity";

  ASSERT_EQ(cuMemRelease(handles.back()), CUDA_SUCCESS);
  handles.pop_back();
  ASSERT_EQ(cuMemAlloc(&ptr, kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuMemCreate(&one_more, kGranule, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY)
      << "cuMemAlloc took half of the freed granule";
  ASSERT_EQ(cuMemFree(ptr), CUDA_SUCCESS);
  for (const auto handle : handles) ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
}

TEST_F(Vmm, ReservationsTakeAddressSpaceButNoCapacity) {
  const CUdeviceptr big = reserve(4 * kCapacity);
  EXPECT_EQ(big % kGranule, 0u);
  EXPECT_EQ(used(0), 0u);
  const CUdeviceptr aligned = reserve(kGranule, 64 * kMiB);
  EXPECT_EQ(aligned % (64 * kMiB), 0u);
  // An odd number of pages is accepted, and carved in whole granules.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const CUdeviceptr odd = reserve(3 * page);
  const CUdeviceptr next = reserve(kGranule);
  EXPECT_TRUE(next >= odd + kGranule || next + kGranule <= odd);

  CUdeviceptr ptr = kUntouchedAddress;
  EXPECT_EQ(cuMemAddressReserve(&ptr, std::size_t{1} << 46, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY)
      << "more than the address space";
  EXPECT_EQ(cuMemAddressReserve(&ptr, 0, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressReserve(&ptr, page + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressReserve(&ptr, kGranule, 3 * kGranule, 0, 0), CUDA_ERROR_INVALID_VALUE)
      << "alignment not a power of two";
  EXPECT_EQ(cuMemAddressReserve(&ptr, kGranule, 0, 1, 0), CUDA_ERROR_INVALID_VALUE)
      << "hint not page aligned";
  EXPECT_EQ(cuMemAddressReserve(&ptr, kGranule, 0, 0, 1), CUDA_ERROR_INVALID_VALUE) << "flags";
  EXPECT_EQ(cuMemAddressReserve(nullptr, kGranule, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(ptr, kUntouchedAddress);

  EXPECT_EQ(cuMemAddressFree(big, 2 * kCapacity), CUDA_ERROR_INVALID_VALUE) << "another size";
  EXPECT_EQ(cuMemAddressFree(big + kGranule, 4 * kCapacity - kGranule), CUDA_ERROR_INVALID_VALUE)
      << "not the start";
  for (const auto& [start, size] : {std::pair{big, 4 * kCapacity}, std::pair{aligned, kGranule},
                                    std::pair{odd, 3 * page}, std::pair{next, kGranule}}) {
    EXPECT_EQ(cuMemAddressFree(start, size), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuMemAddressFree(big, 4 * kCapacity), CUDA_ERROR_INVALID_VALUE) << "double free";
}

TEST_F(Vmm, AHintIsHonouredWhenTheRangeIsFree) {
  const CUdeviceptr first = reserve(4 * kGranule);
  ASSERT_EQ(cuMemAddressFree(first, 4 * kGranule), CUDA_SUCCESS);
  const CUdeviceptr wanted = first + kGranule;
  EXPECT_EQ(reserve(kGranule, 0, wanted), wanted);
  const CUdeviceptr elsewhere = reserve(kGranule, 0, wanted);
  EXPECT_NE(elsewhere, wanted) << "taken: only a hint";
  EXPECT_EQ(cuMemAddressFree(wanted, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(elsewhere, kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, MapChecksTheRangeTheHandleAndTheOffset) {
  const CUdeviceptr base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle handle = create(2 * kGranule);
  ASSERT_EQ(cuMemMap(base, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);

  EXPECT_EQ(cuMemMap(base + kGranule, kGranule, 0, handle, 0), CUDA_ERROR_INVALID_VALUE)
      << "overlaps the first mapping";
  EXPECT_EQ(cuMemMap(base + 3 * kGranule, 2 * kGranule, 0, handle, 0), CUDA_ERROR_INVALID_VALUE)
      << "runs past the reservation";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule + 4096, kGranule, 0, handle, 0), CUDA_ERROR_INVALID_VALUE)
      << "unaligned address";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE)
      << "unaligned size";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, kGranule, kMiB, handle, 0), CUDA_ERROR_INVALID_VALUE)
      << "unaligned offset";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, 2 * kGranule, kGranule, handle, 0),
            CUDA_ERROR_INVALID_VALUE)
      << "past the end of the handle";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, 0, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, kGranule, 0, kUntouchedHandle, 0),
            CUDA_ERROR_INVALID_VALUE)
      << "no such handle";
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, kGranule, 0, handle, 1), CUDA_ERROR_INVALID_VALUE)
      << "flags";
  const CUdeviceptr outside = base + 16 * kGranule;
  EXPECT_EQ(cuMemMap(outside, kGranule, 0, handle, 0), CUDA_ERROR_INVALID_VALUE) << "not reserved";
  // A part of the handle, by offset.
  EXPECT_EQ(cuMemMap(base + 2 * kGranule, kGranule, kGranule, handle, 0), CUDA_SUCCESS);

  EXPECT_EQ(cuMemAddressFree(base, 4 * kGranule), CUDA_ERROR_INVALID_VALUE) << "still mapped";
  ASSERT_EQ(cuMemUnmap(base, 3 * kGranule), CUDA_SUCCESS) << "two mappings, side by side";
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(base, 4 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, UnmapTakesWholeMappingsWithoutHoles) {
  const CUdeviceptr base = reserve(8 * kGranule);
  const CUmemGenericAllocationHandle handle = create(2 * kGranule);
  ASSERT_EQ(cuMemMap(base, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + 4 * kGranule, kGranule, 0, handle, 0), CUDA_SUCCESS);

  EXPECT_EQ(cuMemUnmap(base, kGranule), CUDA_ERROR_INVALID_VALUE) << "half a mapping";
  EXPECT_EQ(cuMemUnmap(base + kGranule, kGranule), CUDA_ERROR_INVALID_VALUE)
      << "the end of a mapping";
  EXPECT_EQ(cuMemUnmap(base, 5 * kGranule), CUDA_ERROR_INVALID_VALUE) << "a hole between";
  EXPECT_EQ(cuMemUnmap(base + 2 * kGranule, kGranule), CUDA_ERROR_INVALID_VALUE) << "unmapped";
  EXPECT_EQ(cuMemUnmap(base, 2 * kGranule + 4096), CUDA_ERROR_INVALID_VALUE) << "unaligned";
  EXPECT_EQ(cuMemUnmap(base, 0), CUDA_ERROR_INVALID_VALUE);

  ASSERT_EQ(cuMemUnmap(base, 2 * kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemUnmap(base + 4 * kGranule, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(base, 2 * kGranule), CUDA_ERROR_INVALID_VALUE) << "unmapped twice";
  // Unmapped ranges are reservations again.
  ASSERT_EQ(cuMemMap(base + kGranule, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemUnmap(base + kGranule, 2 * kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, MappedMemoryIsUsableOnceAccessIsGranted) {
  const CUdeviceptr base = reserve(2 * kGranule);
  const CUmemGenericAllocationHandle handle = create(2 * kGranule);
  ASSERT_EQ(cuMemMap(base, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);
  const std::vector<unsigned char> pattern(4096, 0x5a);
  EXPECT_EQ(cuMemcpyHtoD(base, pattern.data(), pattern.size()), CUDA_ERROR_INVALID_VALUE)
      << "mappings start without access";

  grant(base, 2 * kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(cuMemcpyHtoD(base + kGranule - 2048, pattern.data(), pattern.size()), CUDA_SUCCESS)
      << "across two granules";
  EXPECT_EQ(bytes(base)[kGranule], 0x5a) << "host-readable";
  bytes(base)[0] = 0x11;  // and host-writable
  ASSERT_EQ(cuMemsetD8(base + kGranule, 0x22, kGranule), CUDA_SUCCESS);
  std::vector<unsigned char> back(4096);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), base + kGranule - 2048, back.size()), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 0x5a);
  EXPECT_EQ(back[2048], 0x22);
  EXPECT_EQ(cuMemcpyHtoD(base + 2 * kGranule - 16, pattern.data(), 32), CUDA_ERROR_INVALID_VALUE)
      << "past the mapping";

  // Read-only: reads work, writes are refused.
  grant(base + kGranule, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(cuMemsetD8(base + kGranule, 0, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoH(back.data(), base + kGranule, 16), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 0x22);
  EXPECT_EQ(cuMemsetD8(base, 0, 16), CUDA_SUCCESS) << "the first granule stays writable";

  ASSERT_EQ(cuMemUnmap(base, 2 * kGranule), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoH(back.data(), base, 16), CUDA_ERROR_INVALID_VALUE) << "unmapped";
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 2 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, SetAccessChecksTheRangeAndTheDescriptors) {
  const CUdeviceptr base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle handle = create(kGranule);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  CUmemAccessDesc desc = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(cuMemSetAccess(base, 2 * kGranule, &desc, 1), CUDA_ERROR_INVALID_VALUE)
      << "partly unmapped";
  EXPECT_EQ(cuMemSetAccess(base + kGranule, kGranule, &desc, 1), CUDA_ERROR_INVALID_VALUE)
      << "unmapped";
  EXPECT_EQ(cuMemSetAccess(base, kMiB, &desc, 1), CUDA_ERROR_INVALID_VALUE) << "unaligned";
  EXPECT_EQ(cuMemSetAccess(base, kGranule, nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemSetAccess(base, kGranule, &desc, 0), CUDA_ERROR_INVALID_VALUE);
  desc = access(kDevices, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(cuMemSetAccess(base, kGranule, &desc, 1), CUDA_ERROR_INVALID_DEVICE);
  desc = access(0, static_cast<CUmemAccess_flags>(2));
  EXPECT_EQ(cuMemSetAccess(base, kGranule, &desc, 1), CUDA_ERROR_INVALID_VALUE);
  desc = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  desc.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(cuMemSetAccess(base, kGranule, &desc, 1), CUDA_ERROR_INVALID_VALUE);

  // Several devices at once; access is the union of what they were granted.
  const CUmemAccessDesc both[] = {access(0, CU_MEM_ACCESS_FLAGS_PROT_NONE),
                                  access(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)};
  ASSERT_EQ(cuMemSetAccess(base, kGranule, both, 2), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8(base, 1, 16), CUDA_SUCCESS);
  grant(base, kGranule, CU_MEM_ACCESS_FLAGS_PROT_NONE);  // device 0 only: device 1 keeps it
  EXPECT_EQ(cuMemsetD8(base, 1, 16), CUDA_SUCCESS);

  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 4 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, MemoryWithoutAccessFaultsOnTheHostAsOnTheDevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const CUdeviceptr base = reserve(kGranule);
  const CUmemGenericAllocationHandle handle = create(kGranule);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_DEATH({ [[maybe_unused]] volatile unsigned char byte = bytes(base)[0]; }, "");
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, ReleasingAMappedHandleDefersTheFreeToItsLastUnmap) {
  const CUdeviceptr base = reserve(2 * kGranule);
  const CUmemGenericAllocationHandle handle = create(kGranule);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + kGranule, kGranule, 0, handle, 0), CUDA_SUCCESS);
  grant(base, 2 * kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  bytes(base)[100] = 0x77;
  EXPECT_EQ(bytes(base + kGranule)[100], 0x77) << "two mappings of one handle alias";

  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(used(0), kGranule) << "still mapped, so not freed";
  EXPECT_EQ(bytes(base)[100], 0x77);
  CUmemAllocationProp prop;
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(&prop, handle), CUDA_ERROR_INVALID_VALUE)
      << "but the handle is gone";
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(used(0), kGranule) << "one mapping left";
  EXPECT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemUnmap(base + kGranule, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(used(0), 0u) << "freed with the last mapping";
  ASSERT_EQ(cuMemAddressFree(base, 2 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, AHandleKeepsItsContentsWhileUnmappedAndFreedMemoryIsCleared) {
  const CUdeviceptr base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle handle = create(kGranule);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  grant(base, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  bytes(base)[42] = 0x42;
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + 2 * kGranule, kGranule, 0, handle, 0), CUDA_SUCCESS);
  grant(base + 2 * kGranule, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(bytes(base + 2 * kGranule)[42], 0x42) << "the same memory at another address";
  ASSERT_EQ(cuMemUnmap(base + 2 * kGranule, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);

  // The next handle gets the freed memory back, without its old contents.
  const CUmemGenericAllocationHandle next = create(kGranule);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, next, 0), CUDA_SUCCESS);
  grant(base, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(bytes(base)[42], 0);
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(next), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 4 * kGranule), CUDA_SUCCESS);
}

// PyTorch's expandable segments: one large reservation, grown and shrunk a granule-sized
// handle at a time at its end.
TEST_F(Vmm, ExpandableSegmentGrowsAndShrinks) {
  const std::size_t reserved = 2 * kCapacity;
  const CUdeviceptr segment = reserve(reserved);
  std::vector<CUmemGenericAllocationHandle> handles;
  const auto grow = [&] {
    const CUdeviceptr at = segment + handles.size() * kGranule;
    handles.push_back(create(kGranule));
    ASSERT_EQ(cuMemMap(at, kGranule, 0, handles.back(), 0), CUDA_SUCCESS);
    grant(at, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  };
  for (int i = 0; i < 20; ++i) grow();
  EXPECT_EQ(used(0), 20 * kGranule);
  // The mapped part is one contiguous range of device memory.
  ASSERT_EQ(cuMemsetD8(segment, 0x33, 20 * kGranule), CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) {
    const CUdeviceptr at = segment + (handles.size() - 1) * kGranule;
    ASSERT_EQ(cuMemUnmap(at, kGranule), CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(handles.back()), CUDA_SUCCESS);
    handles.pop_back();
  }
  EXPECT_EQ(used(0), 12 * kGranule);
  EXPECT_EQ(bytes(segment)[12 * kGranule - 1], 0x33);
  EXPECT_EQ(cuMemsetD8(segment + 12 * kGranule, 0, 1), CUDA_ERROR_INVALID_VALUE) << "shrunk";
  for (int i = 0; i < 4; ++i) grow();
  EXPECT_EQ(used(0), 16 * kGranule);
  ASSERT_EQ(cuMemUnmap(segment, handles.size() * kGranule), CUDA_SUCCESS);
  for (const auto handle : handles) ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(segment, reserved), CUDA_SUCCESS);
}

// The virtual memory API is not tied to a context.
TEST_F(Vmm, NeedsNoCurrentContext) {
  std::thread([] {
    CUdeviceptr ptr = 0;
    ASSERT_EQ(cuMemAddressReserve(&ptr, kGranule, 0, 0, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = 0;
    const CUmemAllocationProp prop = device_memory(1);
    ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemMap(ptr, kGranule, 0, handle, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemUnmap(ptr, kGranule), CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAddressFree(ptr, kGranule), CUDA_SUCCESS);
  }).join();
}

// PyTorch's expandable segments ask for fabric handles first and fall back to file descriptors
// on any error but running out of memory.
TEST_F(Vmm, FabricHandlesAreRefusedAndFileDescriptorsGranted) {
  CUmemAllocationProp prop = device_memory(0);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CUmemGenericAllocationHandle handle = kUntouchedHandle;
  EXPECT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(handle, kUntouchedHandle);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  CUmemAllocationProp granted;
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&granted, handle), CUDA_SUCCESS);
  EXPECT_EQ(granted.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1;
  EXPECT_EQ(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(fd, -1);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
}

// The exported descriptor is the device's memory file: mapping it shows the handle's bytes.
TEST_F(Vmm, AnExportedDescriptorMapsTheSameBytes) {
  CUmemAllocationProp prop = device_memory(0);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  const CUdeviceptr ptr = reserve(kGranule);
  ASSERT_EQ(cuMemMap(ptr, kGranule, 0, handle, 0), CUDA_SUCCESS);
  grant(ptr, kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  const char marker[] = "simcuda exported handle marker";
  std::memcpy(bytes(ptr), marker, sizeof marker);

  int fd = -1;
  ASSERT_EQ(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  ASSERT_GE(fd, 0);
  void* const file = mmap(nullptr, kCapacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(file, MAP_FAILED);
  // The handle's chunk is one of the file's; writing through the file shows in the mapping.
  unsigned char* chunk = nullptr;
  for (std::size_t offset = 0; offset < kCapacity; offset += kGranule) {
    auto* const candidate = static_cast<unsigned char*>(file) + offset;
    if (std::memcmp(candidate, marker, sizeof marker) == 0) chunk = candidate;
  }
  ASSERT_NE(chunk, nullptr) << "the handle's bytes are in the file";
  chunk[kGranule - 1] = 0x5a;
  EXPECT_EQ(bytes(ptr)[kGranule - 1], 0x5a);
  munmap(file, kCapacity);
  close(fd);

  int other = -1;
  EXPECT_EQ(cuMemExportToShareableHandle(&other, handle, CU_MEM_HANDLE_TYPE_WIN32, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(
      cuMemExportToShareableHandle(&other, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
      CUDA_ERROR_INVALID_VALUE)
      << "flags";
  EXPECT_EQ(other, -1);
  // Importing is not supported, whatever the descriptor.
  CUmemGenericAllocationHandle imported = kUntouchedHandle;
  EXPECT_EQ(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(std::intptr_t{0}),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(imported, kUntouchedHandle);

  ASSERT_EQ(cuMemUnmap(ptr, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(
      cuMemExportToShareableHandle(&other, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      CUDA_ERROR_INVALID_VALUE)
      << "released";
  ASSERT_EQ(cuMemAddressFree(ptr, kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, OnlyRequestedHandleTypesExport) {
  const CUmemGenericAllocationHandle handle = create(kGranule);
  int fd = -1;
  EXPECT_EQ(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fd, -1);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
}

TEST_F(Vmm, RetainingTheHandleOfAMappingTakesAReference) {
  const CUdeviceptr ptr = reserve(2 * kGranule);
  const CUmemGenericAllocationHandle handle = create(2 * kGranule);
  ASSERT_EQ(cuMemMap(ptr, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(ptr + kGranule + 5)),
            CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  CUmemAllocationProp prop;
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(&prop, handle), CUDA_SUCCESS)
      << "the retained reference keeps it usable";
  ASSERT_EQ(cuMemRelease(retained), CUDA_SUCCESS);
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(&prop, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE) << "no reference left";
  ASSERT_EQ(cuMemUnmap(ptr, 2 * kGranule), CUDA_SUCCESS);
  retained = kUntouchedHandle;
  EXPECT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(ptr)),
            CUDA_ERROR_INVALID_VALUE)
      << "unmapped";
  EXPECT_EQ(retained, kUntouchedHandle);
  ASSERT_EQ(cuMemAddressFree(ptr, 2 * kGranule), CUDA_SUCCESS);
}

TEST_F(Vmm, PointerAttributesAndRangesOfMappings) {
  const CUdeviceptr ptr = reserve(4 * kGranule);
  CUmemAllocationProp prop = device_memory(1);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, 2 * kGranule, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(ptr + kGranule, 2 * kGranule, 0, handle, 0), CUDA_SUCCESS);

  const CUdeviceptr inside = ptr + 2 * kGranule + 100;
  unsigned int memory_type = 0;
  ASSERT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside),
            CUDA_SUCCESS);
  EXPECT_EQ(memory_type, unsigned{CU_MEMORYTYPE_DEVICE});
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  CUdeviceptr start = 0;
  ASSERT_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside),
            CUDA_SUCCESS);
  EXPECT_EQ(start, ptr + kGranule);
  std::size_t size = 0;
  ASSERT_EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, inside), CUDA_SUCCESS);
  EXPECT_EQ(size, 2 * kGranule);
  unsigned int mapped = 0;
  ASSERT_EQ(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, inside), CUDA_SUCCESS);
  EXPECT_EQ(mapped, 1u);
  unsigned int handle_types = 0;
  ASSERT_EQ(cuPointerGetAttribute(&handle_types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, inside),
            CUDA_SUCCESS);
  EXPECT_EQ(handle_types, unsigned{CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR});
  CUcontext context = reinterpret_cast<CUcontext>(std::uintptr_t{1});
  ASSERT_EQ(cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, inside), CUDA_SUCCESS);
  EXPECT_EQ(context, nullptr) << "mapped memory belongs to no context";
  unsigned long long buffer_id = 0;
  ASSERT_EQ(cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, inside),
            CUDA_SUCCESS);
  EXPECT_NE(buffer_id, 0u);
  void* host = nullptr;
  EXPECT_EQ(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, inside),
            CUDA_ERROR_INVALID_VALUE)
      << "device memory has no host pointer";

  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemGetAddressRange(&base, &size, inside), CUDA_SUCCESS);
  EXPECT_EQ(base, ptr + kGranule);
  EXPECT_EQ(size, 2 * kGranule);
  // Reserved but unmapped: unknown.
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, ptr), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr),
            CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MAPPED};
  memory_type = 99;
  mapped = 99;
  void* data[] = {&memory_type, &mapped};
  ASSERT_EQ(cuPointerGetAttributes(2, names, data, ptr), CUDA_SUCCESS);
  EXPECT_EQ(memory_type, 0u);
  EXPECT_EQ(mapped, 0u);

  ASSERT_EQ(cuMemUnmap(ptr + kGranule, 2 * kGranule), CUDA_SUCCESS);
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, inside), CUDA_ERROR_NOT_FOUND) << "unmapped";
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(ptr, 4 * kGranule), CUDA_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
