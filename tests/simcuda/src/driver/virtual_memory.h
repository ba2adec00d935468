// The virtual memory management API (cuMemAddressReserve, cuMemCreate, cuMemMap, ...): address
// reservations, physical allocation handles, and the mappings between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "cuda.h"
#include "physical_memory.h"
#include "range_allocator.h"

namespace simcuda::driver {

// Reservations are carved from one range of address space, reserved inaccessible
// (PROT_NONE, MAP_NORESERVE) when the driver starts and used for nothing else, so that any
// address in it is known to be the virtual memory API's. A reservation costs address space
// only, never device capacity. cuMemCreate takes chunks of a device's PhysicalMemory (the
// caller has checked the device's capacity); cuMemMap maps them over the reservation,
// inaccessible until cuMemSetAccess grants a device read or read-write access, which the host
// gets too: mapped memory the program may use is host-readable, and memory it may not use
// faults, as it would on a GPU. cuMemUnmap puts the inaccessible placeholder back.
//
// Handles are numbers that are never reused, so a stale one is always recognised. A handle counts
// its references: cuMemCreate's and one per cuMemRetainAllocationHandle, each undone by a
// cuMemRelease. A handle without references whose memory is still mapped lives on, unusable,
// until its last mapping goes.
//
// Not thread-safe: the driver serialises all calls.
class VirtualMemory {
 public:
  static constexpr std::size_t kGranularity = PhysicalMemory::kChunk;

  // Reserves `size` bytes of address space (a multiple of kGranularity); `devices` is the
  // physical memory of each device, by ordinal, which must outlive this object.
  VirtualMemory(std::size_t size, std::vector<PhysicalMemory*> devices);
  ~VirtualMemory();
  VirtualMemory(const VirtualMemory&) = delete;
  VirtualMemory& operator=(const VirtualMemory&) = delete;

  bool reserved() const { return base_ != 0; }
  bool contains(std::uintptr_t address) const {
    return address >= base_ && address - base_ < size_;
  }

  CUresult reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint, CUdeviceptr* out);
  CUresult free_reservation(CUdeviceptr ptr, std::size_t size);

  // `size`, a positive multiple of kGranularity, on `device`, whose capacity the caller checked.
  CUresult create(int device, std::size_t size, const CUmemAllocationProp& prop,
                  CUmemGenericAllocationHandle* out);
  CUresult release(CUmemGenericAllocationHandle handle);
  CUresult properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp* out) const;

  // `buffer_id` is what cuPointerGetAttribute reports as the mapping's
  // CU_POINTER_ATTRIBUTE_BUFFER_ID.
  CUresult map(CUdeviceptr ptr, std::size_t size, std::size_t offset,
               CUmemGenericAllocationHandle handle, std::uint64_t buffer_id);
  CUresult unmap(CUdeviceptr ptr, std::size_t size);
  // `desc` holds `count` (> 0) descriptors with valid device ordinals, below 64.
  CUresult set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc,
                      std::size_t count);

  // Whether a device may read (or write) all of [ptr, ptr + count), which lies inside the
  // reserved address space, through current mappings.
  bool accessible(std::uintptr_t ptr, std::size_t count, bool write) const;

  // The mapping that holds an address, for cuPointerGetAttribute and cuMemGetAddressRange.
  struct MappingInfo {
    std::uintptr_t start;
    std::size_t size;
    int device;
    unsigned int handle_types;  // the handle's requestedHandleTypes
    std::uint64_t buffer_id;
  };
  std::optional<MappingInfo> mapping_containing(std::uintptr_t address) const;
  // cuMemRetainAllocationHandle: the handle mapped at `address`, with one more reference.
  CUresult retain(std::uintptr_t address, CUmemGenericAllocationHandle* out);
  // cuMemExportToShareableHandle for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: a new descriptor
  // of the device's memory file (the whole file: chunk n lies at offset n * kGranularity).
  CUresult export_descriptor(CUmemGenericAllocationHandle handle, int* out) const;

  // For tests and diagnostics.
  std::size_t reservation_count() const { return reservations_.size(); }
  std::size_t mapping_count() const { return mappings_.size(); }
  std::size_t handle_count() const { return handles_.size(); }

 private:
  struct Reservation {
    std::size_t size;    // as requested, and as cuMemAddressFree must repeat it
    std::size_t carved;  // taken from the address space: size rounded up to kGranularity
  };
  struct Handle {
    int device;
    std::size_t size;
    std::vector<std::size_t> chunks;  // of the device's PhysicalMemory, kGranularity each
    CUmemAllocationProp prop;
    std::size_t mappings = 0;
    // cuMemCreate's reference and cuMemRetainAllocationHandle's; at 0 the handle is unusable and
    // the memory goes with the last mapping.
    std::size_t references = 1;
  };
  // Which devices may read and write one granule of a mapping (bit n: device n).
  struct Access {
    std::uint64_t readers = 0;
    std::uint64_t writers = 0;
  };
  struct Mapping {
    std::size_t size;
    CUmemGenericAllocationHandle handle;
    std::size_t offset;
    std::vector<Access> access;  // one per granule
    std::uint64_t buffer_id;
  };
  using Mappings = std::map<std::uintptr_t, Mapping>;  // by start address

  const Reservation* reservation_containing(std::uintptr_t ptr, std::size_t size) const;
  // The mapping that contains `address`, or mappings_.end().
  Mappings::const_iterator mapping_at(std::uintptr_t address) const;
  Mappings::iterator mapping_at(std::uintptr_t address);
  // Whether every granule of [ptr, ptr + size) belongs to some mapping.
  bool fully_mapped(std::uintptr_t ptr, std::size_t size) const;
  void free_handle_if_unused(std::map<CUmemGenericAllocationHandle, Handle>::iterator handle);
  // Restores the inaccessible placeholder over [ptr, ptr + size).
  static void unmap_pages(std::uintptr_t ptr, std::size_t size);
  static void protect_granule(std::uintptr_t ptr, const Access& access);

  std::uintptr_t base_ = 0;
  std::size_t size_ = 0;
  std::vector<PhysicalMemory*> devices_;
  RangeAllocator ranges_;
  std::map<std::uintptr_t, Reservation> reservations_;  // by start address
  std::map<CUmemGenericAllocationHandle, Handle> handles_;
  Mappings mappings_;
  CUmemGenericAllocationHandle next_handle_ = 1;
};

}  // namespace simcuda::driver
