// The fixed rows of a trace's enumeration tables, `allocation_kind` and `api`: one line per
// value, from which the named constants, the rows a new trace is filled with and the rule of
// what counts as device memory (kind_occupies_device_memory) all come. The numbers are the wire's
// (`Kind` and `Api` in proto/vramtrace.proto, whose enumerator each row names);
// collector/wire_schema_agreement.cpp checks them against it when the collector compiles, and a
// unit test checks docs/schema.md.
//
// To add a kind or an API: a line here, the enumerator in the proto and a row in docs/schema.md.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

// X(constant, id, name, wire enumerator, occupies device memory, what it is)
//
// Occupying device memory: the bytes are GPU memory in use. Managed memory counts on the device
// it was allocated from; pinned host memory is host RAM. Of the virtual memory API's three
// layers (not three amounts of memory) only the mapping counts: a reservation is address space,
// and a handle's physical memory is counted when (and as often as) it is mapped, so that a
// handle and its mapping are not counted twice. A block lies inside a segment of the kinds that
// count, so its bytes are already counted there.
#define VRAMTRACE_ALLOCATION_KINDS(X)                                               \
  X(kUnknown, 0, "unknown", KIND_UNKNOWN, false,                                    \
    "none of the kinds below (CUPTI: pageable and static memory)")                  \
  X(kDevice, 1, "device", KIND_DEVICE, true,                                        \
    "device memory (cudaMalloc, cudaMallocPitch, cudaMalloc3D, cuMemAlloc)")        \
  X(kManaged, 2, "managed", KIND_MANAGED, true,                                     \
    "managed memory (cudaMallocManaged, cuMemAllocManaged)")                        \
  X(kHostPinned, 3, "host_pinned", KIND_HOST_PINNED, false,                         \
    "page-locked host memory (cudaMallocHost, cudaHostAlloc, cuMemHostAlloc)")      \
  X(kAsync, 4, "async", KIND_ASYNC, true,                                           \
    "stream-ordered memory from a pool (cudaMallocAsync, cudaMallocFromPoolAsync)") \
  X(kVmmReservation, 5, "vmm_reservation", KIND_VMM_RESERVATION, false,             \
    "a range of virtual address space, with no memory behind it")                   \
  X(kVmmHandle, 6, "vmm_handle", KIND_VMM_HANDLE, false,                            \
    "physical memory on a device, not yet usable at any address")                   \
  X(kVmmMapping, 7, "vmm_mapping", KIND_VMM_MAPPING, true,                          \
    "a handle's memory (from `vmm_offset`) made usable at an address")              \
  X(kBlock, 8, "block", KIND_BLOCK, false,                                          \
    "a block of a caching allocator (a tensor's memory), inside a segment")

// X(constant, id, name, wire enumerator): the function that made an event. The driver API is
// named as the user calls it (cuMemAlloc, not its ABI name cuMemAlloc_v2).
#define VRAMTRACE_APIS(X)                                                                       \
  X(kUnknown, 0, "unknown", API_UNKNOWN)                                                        \
  X(kCudaMalloc, 1, "cudaMalloc", API_CUDA_MALLOC)                                              \
  X(kCudaFree, 2, "cudaFree", API_CUDA_FREE)                                                    \
  X(kCudaMallocManaged, 3, "cudaMallocManaged", API_CUDA_MALLOC_MANAGED)                        \
  X(kCudaMallocHost, 4, "cudaMallocHost", API_CUDA_MALLOC_HOST)                                 \
  X(kCudaHostAlloc, 5, "cudaHostAlloc", API_CUDA_HOST_ALLOC)                                    \
  X(kCudaFreeHost, 6, "cudaFreeHost", API_CUDA_FREE_HOST)                                       \
  X(kCudaMallocPitch, 7, "cudaMallocPitch", API_CUDA_MALLOC_PITCH)                              \
  X(kCudaMalloc3D, 8, "cudaMalloc3D", API_CUDA_MALLOC_3D)                                       \
  X(kCudaMallocAsync, 9, "cudaMallocAsync", API_CUDA_MALLOC_ASYNC)                              \
  X(kCudaMallocFromPoolAsync, 10, "cudaMallocFromPoolAsync", API_CUDA_MALLOC_FROM_POOL_ASYNC)   \
  X(kCudaFreeAsync, 11, "cudaFreeAsync", API_CUDA_FREE_ASYNC)                                   \
  X(kCuMemAlloc, 12, "cuMemAlloc", API_CU_MEM_ALLOC)                                            \
  X(kCuMemAllocPitch, 13, "cuMemAllocPitch", API_CU_MEM_ALLOC_PITCH)                            \
  X(kCuMemFree, 14, "cuMemFree", API_CU_MEM_FREE)                                               \
  X(kCuMemAllocManaged, 15, "cuMemAllocManaged", API_CU_MEM_ALLOC_MANAGED)                      \
  X(kCuMemHostAlloc, 16, "cuMemHostAlloc", API_CU_MEM_HOST_ALLOC)                               \
  X(kCuMemAllocHost, 17, "cuMemAllocHost", API_CU_MEM_ALLOC_HOST)                               \
  X(kCuMemFreeHost, 18, "cuMemFreeHost", API_CU_MEM_FREE_HOST)                                  \
  X(kCuMemAllocAsync, 19, "cuMemAllocAsync", API_CU_MEM_ALLOC_ASYNC)                            \
  X(kCuMemAllocFromPoolAsync, 20, "cuMemAllocFromPoolAsync", API_CU_MEM_ALLOC_FROM_POOL_ASYNC)  \
  X(kCuMemFreeAsync, 21, "cuMemFreeAsync", API_CU_MEM_FREE_ASYNC)                               \
  X(kCuMemCreate, 22, "cuMemCreate", API_CU_MEM_CREATE)                                         \
  X(kCuMemRelease, 23, "cuMemRelease", API_CU_MEM_RELEASE)                                      \
  X(kCuMemAddressReserve, 24, "cuMemAddressReserve", API_CU_MEM_ADDRESS_RESERVE)                \
  X(kCuMemAddressFree, 25, "cuMemAddressFree", API_CU_MEM_ADDRESS_FREE)                         \
  X(kCuMemMap, 26, "cuMemMap", API_CU_MEM_MAP)                                                  \
  X(kCuMemUnmap, 27, "cuMemUnmap", API_CU_MEM_UNMAP)                                            \
  X(kC10ReportMemoryUsage, 28, "c10::reportMemoryUsageToProfiler", API_C10_REPORT_MEMORY_USAGE) \
  X(kC10ReportOutOfMemory, 29, "c10::reportOutOfMemoryToProfiler", API_C10_REPORT_OUT_OF_MEMORY)

namespace vramtrace::storage {

// Ids of `allocation_kind` rows.
namespace allocation_kind {
#define VRAMTRACE_KIND_CONSTANT(constant, id, name, wire, occupies, description) \
  inline constexpr int constant = id;
VRAMTRACE_ALLOCATION_KINDS(VRAMTRACE_KIND_CONSTANT)
#undef VRAMTRACE_KIND_CONSTANT
}  // namespace allocation_kind

// Ids of `api` rows.
namespace api {
#define VRAMTRACE_API_CONSTANT(constant, id, name, wire) inline constexpr int constant = id;
VRAMTRACE_APIS(VRAMTRACE_API_CONSTANT)
#undef VRAMTRACE_API_CONSTANT
}  // namespace api

struct AllocationKindInfo {
  int id;
  std::string_view name;
  bool occupies_device_memory;
  std::string_view description;
};

struct NamedId {
  int id;
  std::string_view name;
};

// By id: the ids run 0, 1, 2... (checked below), so kAllocationKinds[kind] is that kind's row.
inline constexpr std::array kAllocationKinds{
#define VRAMTRACE_KIND_ROW(constant, id, name, wire, occupies, description) \
  AllocationKindInfo{id, name, occupies, description},
    VRAMTRACE_ALLOCATION_KINDS(VRAMTRACE_KIND_ROW)
#undef VRAMTRACE_KIND_ROW
};

inline constexpr std::array kApis{
#define VRAMTRACE_API_ROW(constant, id, name, wire) NamedId{id, name},
    VRAMTRACE_APIS(VRAMTRACE_API_ROW)
#undef VRAMTRACE_API_ROW
};

template <typename Rows>
constexpr bool ids_are_positions(const Rows& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].id != static_cast<int>(i)) return false;
  return true;
}
static_assert(ids_are_positions(kAllocationKinds), "allocation kinds must be listed by id, 0 up");
static_assert(ids_are_positions(kApis), "APIs must be listed by id, 0 up");

// False for ids outside the table (a kind a newer recorder wrote).
constexpr bool kind_occupies_device_memory(int kind) {
  return kind >= 0 && static_cast<std::size_t>(kind) < kAllocationKinds.size() &&
         kAllocationKinds[static_cast<std::size_t>(kind)].occupies_device_memory;
}

}  // namespace vramtrace::storage
