#include "virtual_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <iterator>
#include <limits>
#include <utility>

namespace simcuda::driver {
namespace {

constexpr std::size_t kGranularity = VirtualMemory::kGranularity;

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool granule_aligned(std::size_t value) {
  return value % kGranularity == 0;
}

void* as_pointer(std::uintptr_t address) {
  return reinterpret_cast<void*>(address);
}

}  // namespace

VirtualMemory::VirtualMemory(std::size_t size, std::vector<PhysicalMemory*> devices)
    : devices_(std::move(devices)), ranges_(0, 0) {
  // Over-reserve by a granule so that the range can start on a granule boundary, then give the
  // ends back.
  const std::size_t padded = size + kGranularity;
  void* const raw =
      mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return;
  const auto raw_address = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t base = (raw_address + kGranularity - 1) / kGranularity * kGranularity;
  if (base > raw_address) munmap(raw, base - raw_address);
  const std::uintptr_t tail = base + size;
  if (raw_address + padded > tail) munmap(as_pointer(tail), raw_address + padded - tail);
  base_ = base;
  size_ = size;
  ranges_ = RangeAllocator(base_, size_);
}

VirtualMemory::~VirtualMemory() {
  if (base_ != 0) munmap(as_pointer(base_), size_);
}

CUresult VirtualMemory::reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint,
                                CUdeviceptr* out) {
  // As documented: sizes and hints in whole host pages, alignment a power of two or 0.
  const std::size_t page = page_size();
  if (size == 0 || size % page != 0 || hint % page != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > std::numeric_limits<std::size_t>::max() - kGranularity) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Whatever was asked, reservations start and end on granules, where mappings can.
  const std::size_t carved = (size + kGranularity - 1) / kGranularity * kGranularity;
  const std::size_t align = alignment > kGranularity ? alignment : kGranularity;
  std::size_t offset = 0;
  // The hint is honoured when it can be; otherwise it is only a hint.
  if (hint != 0 && hint % align == 0 && contains(hint) &&
      ranges_.allocate_at(hint - base_, carved)) {
    offset = hint - base_;
  } else if (const auto found = ranges_.allocate(carved, align)) {
    offset = *found;
  } else {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  reservations_.emplace(base_ + offset, Reservation{.size = size, .carved = carved});
  *out = base_ + offset;
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::free_reservation(CUdeviceptr ptr, std::size_t size) {
  const auto reservation = reservations_.find(ptr);
  if (reservation == reservations_.end() || reservation->second.size != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Memory still mapped into it must be unmapped first.
  const std::size_t carved = reservation->second.carved;
  const auto after = mappings_.lower_bound(ptr + carved);
  if (after != mappings_.begin() && std::prev(after)->first >= ptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  ranges_.release(ptr - base_, carved);
  reservations_.erase(reservation);
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::create(int device, std::size_t size, const CUmemAllocationProp& prop,
                               CUmemGenericAllocationHandle* out) {
  auto chunks = devices_[static_cast<std::size_t>(device)]->allocate(size / kGranularity);
  if (!chunks) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUmemGenericAllocationHandle handle = next_handle_++;
  handles_.emplace(
      handle, Handle{.device = device, .size = size, .chunks = std::move(*chunks), .prop = prop});
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::release(CUmemGenericAllocationHandle handle) {
  const auto found = handles_.find(handle);
  if (found == handles_.end() || found->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  --found->second.references;
  free_handle_if_unused(found);
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::properties(CUmemGenericAllocationHandle handle,
                                   CUmemAllocationProp* out) const {
  const auto found = handles_.find(handle);
  if (found == handles_.end() || found->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  *out = found->second.prop;
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::map(CUdeviceptr ptr, std::size_t size, std::size_t offset,
                            CUmemGenericAllocationHandle handle, std::uint64_t buffer_id) {
  if (size == 0 || !granule_aligned(ptr) || !granule_aligned(size) || !granule_aligned(offset)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto found = handles_.find(handle);
  if (found == handles_.end() || found->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  Handle& memory = found->second;
  if (offset > memory.size || size > memory.size - offset) return CUDA_ERROR_INVALID_VALUE;
  if (reservation_containing(ptr, size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Only what is not mapped yet can be mapped: the last mapping that starts before the end of
  // the range is the only one that could reach into it.
  const auto after = mappings_.lower_bound(ptr + size);
  if (after != mappings_.begin()) {
    const auto before = std::prev(after);
    if (before->first + before->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  const PhysicalMemory& physical = *devices_[static_cast<std::size_t>(memory.device)];
  if (!physical.map(as_pointer(ptr), memory.chunks.data() + offset / kGranularity,
                    size / kGranularity)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  mappings_.emplace(ptr, Mapping{.size = size,
                                 .handle = handle,
                                 .offset = offset,
                                 .access = std::vector<Access>(size / kGranularity),
                                 .buffer_id = buffer_id});
  ++memory.mappings;
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::unmap(CUdeviceptr ptr, std::size_t size) {
  if (size == 0 || !granule_aligned(ptr) || !granule_aligned(size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The range must be made of whole mappings, one after the other: cuMemUnmap cannot unmap a
  // part of what one cuMemMap mapped.
  std::vector<Mappings::iterator> covered;
  for (std::uintptr_t cursor = ptr; cursor < ptr + size;) {
    const auto mapping = mappings_.find(cursor);
    if (mapping == mappings_.end() || mapping->second.size > ptr + size - cursor) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    covered.push_back(mapping);
    cursor += mapping->second.size;
  }
  for (const auto mapping : covered) {
    unmap_pages(mapping->first, mapping->second.size);
    const auto memory = handles_.find(mapping->second.handle);
    --memory->second.mappings;
    mappings_.erase(mapping);
    free_handle_if_unused(memory);
  }
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc,
                                   std::size_t count) {
  if (size == 0 || !granule_aligned(ptr) || !granule_aligned(size) || !fully_mapped(ptr, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (std::uintptr_t granule = ptr; granule < ptr + size; granule += kGranularity) {
    const auto mapping = mapping_at(granule);
    Access& access = mapping->second.access[(granule - mapping->first) / kGranularity];
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << desc[i].location.id;
      access.readers &= ~bit;
      access.writers &= ~bit;
      if ((desc[i].flags & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0) access.readers |= bit;
      if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) access.writers |= bit;
    }
    protect_granule(granule, access);
  }
  return CUDA_SUCCESS;
}

bool VirtualMemory::accessible(std::uintptr_t ptr, std::size_t count, bool write) const {
  const std::uintptr_t end = ptr + count;
  for (std::uintptr_t granule = ptr / kGranularity * kGranularity; granule < end;
       granule += kGranularity) {
    const auto mapping = mapping_at(granule);
    if (mapping == mappings_.end()) return false;
    const Access& access = mapping->second.access[(granule - mapping->first) / kGranularity];
    if ((write ? access.writers : access.readers) == 0) return false;
  }
  return true;
}

std::optional<VirtualMemory::MappingInfo> VirtualMemory::mapping_containing(
    std::uintptr_t address) const {
  const auto mapping = mapping_at(address);
  if (mapping == mappings_.end()) return std::nullopt;
  const Handle& memory = handles_.at(mapping->second.handle);
  return MappingInfo{.start = mapping->first,
                     .size = mapping->second.size,
                     .device = memory.device,
                     .handle_types = static_cast<unsigned int>(memory.prop.requestedHandleTypes),
                     .buffer_id = mapping->second.buffer_id};
}

CUresult VirtualMemory::retain(std::uintptr_t address, CUmemGenericAllocationHandle* out) {
  const auto mapping = mapping_at(address);
  if (mapping == mappings_.end()) return CUDA_ERROR_INVALID_VALUE;
  // A handle released while mapped is alive until unmapped; retaining it makes it usable again,
  // as the real one is (the mapping kept it).
  ++handles_.at(mapping->second.handle).references;
  *out = mapping->second.handle;
  return CUDA_SUCCESS;
}

CUresult VirtualMemory::export_descriptor(CUmemGenericAllocationHandle handle, int* out) const {
  const auto found = handles_.find(handle);
  if (found == handles_.end() || found->second.references == 0) return CUDA_ERROR_INVALID_VALUE;
  const Handle& memory = found->second;
  // Only what cuMemCreate was asked to make exportable can be exported.
  if ((memory.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int fd = devices_[static_cast<std::size_t>(memory.device)]->duplicate_descriptor();
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = fd;
  return CUDA_SUCCESS;
}

const VirtualMemory::Reservation* VirtualMemory::reservation_containing(std::uintptr_t ptr,
                                                                        std::size_t size) const {
  const auto after = reservations_.upper_bound(ptr);
  if (after == reservations_.begin()) return nullptr;
  const auto& [start, reservation] = *std::prev(after);
  const std::uintptr_t offset = ptr - start;
  if (offset >= reservation.size || size > reservation.size - offset) return nullptr;
  return &reservation;
}

VirtualMemory::Mappings::const_iterator VirtualMemory::mapping_at(std::uintptr_t address) const {
  const auto after = mappings_.upper_bound(address);
  if (after == mappings_.begin()) return mappings_.end();
  const auto mapping = std::prev(after);
  return address - mapping->first < mapping->second.size ? mapping : mappings_.end();
}

VirtualMemory::Mappings::iterator VirtualMemory::mapping_at(std::uintptr_t address) {
  const auto after = mappings_.upper_bound(address);
  if (after == mappings_.begin()) return mappings_.end();
  const auto mapping = std::prev(after);
  return address - mapping->first < mapping->second.size ? mapping : mappings_.end();
}

bool VirtualMemory::fully_mapped(std::uintptr_t ptr, std::size_t size) const {
  for (std::uintptr_t granule = ptr; granule < ptr + size; granule += kGranularity) {
    if (mapping_at(granule) == mappings_.end()) return false;
  }
  return true;
}

void VirtualMemory::free_handle_if_unused(
    std::map<CUmemGenericAllocationHandle, Handle>::iterator handle) {
  Handle& memory = handle->second;
  if (memory.references > 0 || memory.mappings > 0) return;
  devices_[static_cast<std::size_t>(memory.device)]->release(memory.chunks);
  handles_.erase(handle);
}

void VirtualMemory::unmap_pages(std::uintptr_t ptr, std::size_t size) {
  mmap(as_pointer(ptr), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
       -1, 0);
}

void VirtualMemory::protect_granule(std::uintptr_t ptr, const Access& access) {
  const int protection = access.writers != 0   ? PROT_READ | PROT_WRITE
                         : access.readers != 0 ? PROT_READ
                                               : PROT_NONE;
  mprotect(as_pointer(ptr), kGranularity, protection);
}

}  // namespace simcuda::driver
