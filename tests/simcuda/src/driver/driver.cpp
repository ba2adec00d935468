#include "driver.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>

namespace simcuda::driver {
namespace {

void* as_pointer(std::uintptr_t address) {
  return reinterpret_cast<void*>(address);
}

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool is_implicit_stream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

bool in_heap(AllocationKind kind) {
  return kind != AllocationKind::PinnedHost;
}

// The address space that cuMemAddressReserve carves: room for several times the memory of all
// devices, since programs reserve generously (PyTorch's expandable segments reserve more than
// a device holds, per segment). It is only address space, reserved inaccessible.
std::size_t virtual_address_space_size(std::size_t total_device_memory) {
  constexpr std::size_t kMinimum = std::size_t{1} << 30;
  constexpr std::size_t kMaximum = std::size_t{64} << 40;
  const std::size_t wanted =
      total_device_memory > kMaximum / 8 ? kMaximum : std::max(kMinimum, total_device_memory * 8);
  const std::size_t granularity = VirtualMemory::kGranularity;
  return (wanted + granularity - 1) / granularity * granularity;
}

// The current context is per host thread.
thread_local CUctx_st* t_current_context = nullptr;

}  // namespace

Driver& Driver::get() {
  static Driver* const instance = new Driver();
  return *instance;
}

CUresult Driver::init() {
  std::call_once(init_once_, [this] { init_result_ = build_machine(); });
  return init_result_;
}

CUresult Driver::initialized() const {
  return init_result_ == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult Driver::build_machine() {
  const ConfigResult result = read_config_from_environment();
  if (!result.error.empty()) {
    std::fprintf(stderr, "simcuda: %s; cuInit fails with CUDA_ERROR_NOT_INITIALIZED\n",
                 result.error.c_str());
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  const Config& config = result.config;
  if (config.no_device || config.device_count == 0) return CUDA_ERROR_NO_DEVICE;

  std::vector<std::unique_ptr<Device>> devices;
  for (int device = 0; device < config.device_count; ++device) {
    auto heap = std::make_unique<Arena>(config.device_memory);
    if (!heap->reserved()) {
      std::fprintf(stderr,
                   "simcuda: could not reserve %zu bytes of address space for device %d (%s); "
                   "lower SIMCUDA_DEVICE_MEMORY or SIMCUDA_DEVICE_COUNT\n",
                   config.device_memory, device, std::strerror(errno));
      return CUDA_ERROR_NOT_INITIALIZED;
    }
    devices.push_back(std::make_unique<Device>(device, config.device_memory, std::move(heap)));
  }
  std::vector<PhysicalMemory*> physical;
  for (const auto& device : devices) physical.push_back(&device->physical);
  const std::size_t total = config.device_memory * static_cast<std::size_t>(config.device_count);
  auto virtual_memory =
      std::make_unique<VirtualMemory>(virtual_address_space_size(total), std::move(physical));
  if (!virtual_memory->reserved()) {
    std::fprintf(stderr,
                 "simcuda: could not reserve address space for cuMemAddressReserve (%s); lower "
                 "SIMCUDA_DEVICE_MEMORY or SIMCUDA_DEVICE_COUNT\n",
                 std::strerror(errno));
    return CUDA_ERROR_NOT_INITIALIZED;
  }

  std::lock_guard lock(mutex_);
  for (int device = 0; device < config.device_count; ++device) {
    auto pool = std::make_unique<CUmemPoolHandle_st>(
        CUmemPoolHandle_st{.device = device, .is_default = true, .max_size = 0});
    devices[device]->default_pool = pool.get();
    pools_.emplace(pool.get(), std::move(pool));
  }
  devices_ = std::move(devices);
  virtual_memory_ = std::move(virtual_memory);
  return CUDA_SUCCESS;
}

CUcontext Driver::retain_primary(int device) {
  std::lock_guard lock(mutex_);
  CUctx_st& context = devices_[device]->primary;
  ++context.retains;
  return &context;
}

CUresult Driver::release_primary(int device) {
  std::lock_guard lock(mutex_);
  CUctx_st& context = devices_[device]->primary;
  if (context.retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The last release destroys what the context holds, as the real driver resets it.
  if (--context.retains == 0) reset_primary_locked(device);
  return CUDA_SUCCESS;
}

void Driver::reset_primary(int device) {
  std::lock_guard lock(mutex_);
  reset_primary_locked(device);
}

void Driver::reset_primary_locked(int device) {
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    const auto next = std::next(it);
    if (it->second.device == device) release_locked(it);
    it = next;
  }
  std::erase_if(streams_, [device](const auto& entry) { return entry.second->device == device; });
  // Created pools of the device go too, even those already destroyed; the default pool stays.
  std::erase_if(pools_, [device](const auto& entry) {
    return entry.second->device == device && !entry.second->is_default;
  });
}

CUctx_st* Driver::find_context(CUcontext ctx) {
  for (const auto& device : devices_) {
    if (ctx == &device->primary) return &device->primary;
  }
  return nullptr;
}

CUcontext Driver::current_context() {
  return t_current_context;
}

void Driver::set_current_context(CUctx_st* ctx) {
  t_current_context = ctx;
}

CUresult Driver::context_device(CUcontext ctx, int* device) {
  CUctx_st* const context = ctx == nullptr ? t_current_context : find_context(ctx);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(mutex_);
  if (context->retains == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *device = context->device;
  return CUDA_SUCCESS;
}

CUresult Driver::allocate(int device, std::size_t size, AllocationKind kind, CUdeviceptr* out) {
  std::lock_guard lock(mutex_);
  return allocate_locked(device, size, kind, nullptr, out);
}

CUresult Driver::free_device_memory(CUdeviceptr ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(ptr);
  if (allocation == allocations_.end() || !in_heap(allocation->second.kind)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_locked(allocation);
  return CUDA_SUCCESS;
}

CUresult Driver::allocate_host(int device, std::size_t size, void** out) {
  const std::size_t page = page_size();
  if (size > std::numeric_limits<std::size_t>::max() - (page - 1)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t reserved = (size + page - 1) / page * page;
  void* ptr = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mutex_);
  allocations_.emplace(reinterpret_cast<std::uintptr_t>(ptr),
                       Allocation{.size = size,
                                  .reserved = reserved,
                                  .kind = AllocationKind::PinnedHost,
                                  .device = device,
                                  .pool = nullptr});
  *out = ptr;
  return CUDA_SUCCESS;
}

CUresult Driver::free_host_memory(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (allocation == allocations_.end() || allocation->second.kind != AllocationKind::PinnedHost) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_locked(allocation);
  return CUDA_SUCCESS;
}

void Driver::memory_info(int device, std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard lock(mutex_);
  const Device& state = *devices_[device];
  *free_bytes = state.capacity - state.committed();
  *total_bytes = state.capacity;
}

CUresult Driver::allocate_async(int current_device, std::size_t size, CUstream stream,
                                CUdeviceptr* out) {
  std::lock_guard lock(mutex_);
  // As with the real allocator, the memory comes from the stream's device's pool.
  const std::optional<int> device = stream_device_locked(stream, current_device);
  if (!device) return CUDA_ERROR_INVALID_HANDLE;
  return allocate_locked(*device, size, AllocationKind::Async, devices_[*device]->default_pool,
                         out);
}

CUresult Driver::allocate_from_pool(CUmemoryPool pool, std::size_t size, CUstream stream,
                                    CUdeviceptr* out) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  if (!stream_device_locked(stream, 0)) return CUDA_ERROR_INVALID_HANDLE;
  return allocate_locked(pool->device, size, AllocationKind::Async, pool, out);
}

CUresult Driver::free_async(CUdeviceptr ptr, CUstream stream) {
  std::lock_guard lock(mutex_);
  if (!stream_device_locked(stream, 0)) return CUDA_ERROR_INVALID_HANDLE;
  if (ptr == 0) return CUDA_SUCCESS;
  // Like the real one, cuMemFreeAsync also takes memory from cuMemAlloc and cuMemAllocManaged.
  const auto allocation = allocations_.find(ptr);
  if (allocation == allocations_.end() || !in_heap(allocation->second.kind)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_locked(allocation);
  return CUDA_SUCCESS;
}

CUresult Driver::copy(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side,
                      std::size_t count) {
  if (count == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  if (!usable_locked(dst, count, dst_side, true) || !usable_locked(src, count, src_side, false)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(as_pointer(dst), as_pointer(src), count);
  return CUDA_SUCCESS;
}

CUresult Driver::fill(std::uintptr_t dst, unsigned char value, std::size_t count) {
  if (count == 0) return CUDA_SUCCESS;
  std::lock_guard lock(mutex_);
  if (!usable_locked(dst, count, Side::Device, true)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(as_pointer(dst), value, count);
  return CUDA_SUCCESS;
}

CUresult Driver::create_stream(int device, unsigned int flags, CUstream* out) {
  std::lock_guard lock(mutex_);
  auto stream = std::make_unique<CUstream_st>(CUstream_st{.device = device, .flags = flags});
  *out = stream.get();
  streams_.emplace(stream.get(), std::move(stream));
  return CUDA_SUCCESS;
}

CUresult Driver::destroy_stream(CUstream stream) {
  std::lock_guard lock(mutex_);
  // The implicit streams are not objects that can be destroyed.
  return streams_.erase(stream) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Driver::check_stream(CUstream stream) {
  std::lock_guard lock(mutex_);
  return stream_device_locked(stream, 0) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Driver::create_pool(const CUmemPoolProps& props, CUmemoryPool* out) {
  // Checks follow the documentation of cuMemPoolCreate and of the struct's fields. Pools of
  // host or managed memory exist in the real driver but not here.
  if (props.allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_NOT_SUPPORTED;
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (props.location.type == CU_MEM_LOCATION_TYPE_HOST ||
      props.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (props.location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(props.location.id)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Linux pools can be exported as file descriptors (not that the simulation exports any);
  // Windows handles and fabric handles are not available.
  if ((props.handleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (props.win32SecurityAttributes != nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const unsigned char byte : props.reserved) {
    if (byte != 0) return CUDA_ERROR_INVALID_VALUE;
  }

  std::lock_guard lock(mutex_);
  auto pool = std::make_unique<CUmemPoolHandle_st>(CUmemPoolHandle_st{
      .device = props.location.id, .is_default = false, .max_size = props.maxSize});
  *out = pool.get();
  pools_.emplace(pool.get(), std::move(pool));
  return CUDA_SUCCESS;
}

CUresult Driver::destroy_pool(CUmemoryPool pool) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  if (pool->live_count == 0) {
    pools_.erase(pool);
  } else {
    pool->destroyed = true;  // released by release_locked with its last allocation
  }
  return CUDA_SUCCESS;
}

CUresult Driver::check_pool(CUmemoryPool pool) {
  std::lock_guard lock(mutex_);
  return pool_usable_locked(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult Driver::reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint,
                         CUdeviceptr* out) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->reserve(size, alignment, hint, out);
}

CUresult Driver::free_reservation(CUdeviceptr ptr, std::size_t size) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->free_reservation(ptr, size);
}

CUresult Driver::create_physical(int device, std::size_t size, const CUmemAllocationProp& prop,
                                 CUmemGenericAllocationHandle* out) {
  std::lock_guard lock(mutex_);
  // Physical memory takes device capacity, shared with the heap.
  const Device& state = *devices_[device];
  if (size > state.capacity - state.committed()) return CUDA_ERROR_OUT_OF_MEMORY;
  return virtual_memory_->create(device, size, prop, out);
}

CUresult Driver::release_physical(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->release(handle);
}

CUresult Driver::physical_properties(CUmemGenericAllocationHandle handle,
                                     CUmemAllocationProp* out) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->properties(handle, out);
}

CUresult Driver::map(CUdeviceptr ptr, std::size_t size, std::size_t offset,
                     CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->map(ptr, size, offset, handle);
}

CUresult Driver::unmap(CUdeviceptr ptr, std::size_t size) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->unmap(ptr, size);
}

CUresult Driver::set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc,
                            std::size_t count) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->set_access(ptr, size, desc, count);
}

CUresult Driver::allocate_locked(int device, std::size_t size, AllocationKind kind,
                                 CUmemPoolHandle_st* pool, CUdeviceptr* out) {
  const std::optional<std::size_t> reserved = Arena::round_up(size);
  if (!reserved) return CUDA_ERROR_OUT_OF_MEMORY;
  if (pool != nullptr && pool->max_size != 0 &&
      (*reserved > pool->max_size || pool->live_bytes > pool->max_size - *reserved)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Device& state = *devices_[device];
  // The heap's address range is as large as the capacity, but cuMemCreate's memory counts too.
  if (*reserved > state.capacity - state.committed()) return CUDA_ERROR_OUT_OF_MEMORY;
  std::byte* ptr = state.heap->allocate(*reserved);
  if (ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  allocations_.emplace(
      address,
      Allocation{
          .size = size, .reserved = *reserved, .kind = kind, .device = device, .pool = pool});
  if (pool != nullptr) {
    ++pool->live_count;
    pool->live_bytes += *reserved;
  }
  *out = address;
  return CUDA_SUCCESS;
}

void Driver::release_locked(Allocations::iterator allocation) {
  auto* const ptr = reinterpret_cast<std::byte*>(allocation->first);
  const Allocation& info = allocation->second;
  if (info.kind == AllocationKind::PinnedHost) {
    munmap(ptr, info.reserved);
  } else {
    devices_[info.device]->heap->release(ptr, info.reserved);
  }
  if (CUmemPoolHandle_st* pool = info.pool) {
    --pool->live_count;
    pool->live_bytes -= info.reserved;
    if (pool->destroyed && pool->live_count == 0) pools_.erase(pool);
  }
  allocations_.erase(allocation);
}

std::optional<int> Driver::stream_device_locked(CUstream stream, int current_device) const {
  if (is_implicit_stream(stream)) return current_device;
  const auto found = streams_.find(stream);
  if (found == streams_.end()) return std::nullopt;
  return found->second->device;
}

bool Driver::pool_usable_locked(CUmemoryPool pool) const {
  const auto found = pools_.find(pool);
  return found != pools_.end() && !found->second->destroyed;
}

const Allocation* Driver::find_containing_locked(std::uintptr_t ptr, std::size_t count) const {
  auto after = allocations_.upper_bound(ptr);
  if (after == allocations_.begin()) return nullptr;
  const auto& [start, allocation] = *std::prev(after);
  const std::uintptr_t offset = ptr - start;
  if (offset >= allocation.size || count > allocation.size - offset) return nullptr;
  return &allocation;
}

bool Driver::inside_any_heap(std::uintptr_t ptr) const {
  for (const auto& device : devices_) {
    if (device->heap->contains(as_pointer(ptr))) return true;
  }
  return false;
}

bool Driver::usable_locked(std::uintptr_t ptr, std::size_t count, Side side, bool write) const {
  if (count > std::numeric_limits<std::uintptr_t>::max() - ptr) return false;
  // Anything inside a heap or the reserved address space is device memory, and must be live:
  // the real device would fault on freed or unmapped memory.
  if (inside_any_heap(ptr)) {
    const Allocation* allocation = find_containing_locked(ptr, count);
    return allocation != nullptr && in_heap(allocation->kind);
  }
  if (virtual_memory_->contains(ptr)) return virtual_memory_->accessible(ptr, count, write);
  return side != Side::Device;
}

}  // namespace simcuda::driver
