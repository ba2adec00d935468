#include "runtime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

namespace simcuda {
namespace {

std::uintptr_t address(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool is_implicit_stream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

bool in_arena(AllocationKind kind) {
  return kind != AllocationKind::PinnedHost;
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime* const instance = new Runtime(read_config_from_environment());
  return *instance;
}

Runtime::Runtime(const ConfigResult& result) {
  if (!result.error.empty()) {
    std::fprintf(stderr,
                 "simcuda: %s; every CUDA call will fail with cudaErrorInitializationError\n",
                 result.error.c_str());
    init_error_ = cudaErrorInitializationError;
    return;
  }
  const Config& config = result.config;
  if (config.no_device || config.device_count == 0) {
    init_error_ = cudaErrorNoDevice;
    return;
  }
  for (int device = 0; device < config.device_count; ++device) {
    auto arena = std::make_unique<Arena>(config.device_memory);
    if (!arena->reserved()) {
      std::fprintf(stderr,
                   "simcuda: could not reserve %zu bytes of address space for device %d (%s); "
                   "lower SIMCUDA_DEVICE_MEMORY or SIMCUDA_DEVICE_COUNT\n",
                   config.device_memory, device, std::strerror(errno));
      devices_.clear();
      pools_.clear();
      init_error_ = cudaErrorInitializationError;
      return;
    }
    auto pool = std::make_unique<CUmemPoolHandle_st>(
        CUmemPoolHandle_st{.device = device, .is_default = true, .max_size = 0});
    devices_.push_back(Device{std::move(arena), pool.get()});
    pools_.emplace(pool.get(), std::move(pool));
  }
}

cudaError_t Runtime::allocate(int device, std::size_t size, AllocationKind kind, void** out) {
  std::lock_guard lock(mutex_);
  return allocate_locked(device, size, kind, nullptr, out);
}

cudaError_t Runtime::free_device_memory(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(address(ptr));
  if (allocation == allocations_.end() || !in_arena(allocation->second.kind)) {
    return cudaErrorInvalidValue;
  }
  release_locked(allocation);
  return cudaSuccess;
}

cudaError_t Runtime::allocate_host(int device, std::size_t size, void** out) {
  std::lock_guard lock(mutex_);
  if (size == 0) {
    *out = nullptr;
    return cudaSuccess;
  }
  const std::size_t page = page_size();
  if (size > SIZE_MAX - (page - 1)) return cudaErrorMemoryAllocation;
  const std::size_t reserved = (size + page - 1) / page * page;
  void* ptr = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr == MAP_FAILED) return cudaErrorMemoryAllocation;
  allocations_.emplace(address(ptr), Allocation{.size = size,
                                                .reserved = reserved,
                                                .kind = AllocationKind::PinnedHost,
                                                .device = device,
                                                .pool = nullptr});
  *out = ptr;
  return cudaSuccess;
}

cudaError_t Runtime::free_host_memory(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(address(ptr));
  if (allocation == allocations_.end() || allocation->second.kind != AllocationKind::PinnedHost) {
    return cudaErrorInvalidValue;
  }
  release_locked(allocation);
  return cudaSuccess;
}

cudaError_t Runtime::allocate_async(int current_device, std::size_t size, cudaStream_t stream,
                                    void** out) {
  std::lock_guard lock(mutex_);
  // As with the real allocator, the memory comes from the stream's device's pool.
  const std::optional<int> device = stream_device_locked(stream, current_device);
  if (!device) return cudaErrorInvalidResourceHandle;
  return allocate_locked(*device, size, AllocationKind::Async, devices_[*device].default_pool, out);
}

cudaError_t Runtime::allocate_from_pool(cudaMemPool_t pool, std::size_t size, cudaStream_t stream,
                                        void** out) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return cudaErrorInvalidValue;
  if (!stream_device_locked(stream, 0)) return cudaErrorInvalidResourceHandle;
  return allocate_locked(pool->device, size, AllocationKind::Async, pool, out);
}

cudaError_t Runtime::free_async(void* ptr, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  if (!stream_device_locked(stream, 0)) return cudaErrorInvalidResourceHandle;
  if (ptr == nullptr) return cudaSuccess;
  // Like the real one, cudaFreeAsync also takes memory from cudaMalloc and cudaMallocManaged.
  const auto allocation = allocations_.find(address(ptr));
  if (allocation == allocations_.end() || !in_arena(allocation->second.kind)) {
    return cudaErrorInvalidValue;
  }
  release_locked(allocation);
  return cudaSuccess;
}

cudaError_t Runtime::copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
  std::lock_guard lock(mutex_);
  // Compared as an int: callers may pass any value, not only the enumerators.
  const int direction = static_cast<int>(kind);
  if (direction < cudaMemcpyHostToHost || direction > cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const bool dst_on_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_on_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  // A side the kind names as device memory must be live device memory. Either side that
  // points into an arena must be live too: the real device would fault on freed memory.
  const auto valid = [&](const void* ptr, bool on_device) {
    if (on_device || inside_any_arena(ptr)) {
      const Allocation* allocation = find_containing_locked(ptr, count);
      return allocation != nullptr && in_arena(allocation->kind);
    }
    return true;
  };
  if (!valid(dst, dst_on_device) || !valid(src, src_on_device)) return cudaErrorInvalidValue;
  std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t Runtime::fill(void* dst, int value, std::size_t count) {
  std::lock_guard lock(mutex_);
  if (count == 0) return cudaSuccess;
  const Allocation* allocation = find_containing_locked(dst, count);
  if (allocation == nullptr || !in_arena(allocation->kind)) return cudaErrorInvalidValue;
  std::memset(dst, value, count);
  return cudaSuccess;
}

void Runtime::memory_info(int device, std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard lock(mutex_);
  const Arena& arena = *devices_[device].arena;
  *free_bytes = arena.capacity() - arena.used();
  *total_bytes = arena.capacity();
}

cudaError_t Runtime::create_stream(int device, unsigned int flags, cudaStream_t* out) {
  std::lock_guard lock(mutex_);
  auto stream = std::make_unique<CUstream_st>(CUstream_st{.device = device, .flags = flags});
  *out = stream.get();
  streams_.emplace(stream.get(), std::move(stream));
  return cudaSuccess;
}

cudaError_t Runtime::destroy_stream(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  // The implicit streams are not objects that can be destroyed.
  return streams_.erase(stream) == 1 ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t Runtime::check_stream(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  return stream_device_locked(stream, 0) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t Runtime::create_pool(const cudaMemPoolProps& props, cudaMemPool_t* out) {
  // Checks follow the documentation of cudaMemPoolCreate and of the struct's fields. Pools of
  // host or managed memory exist in the real runtime but not here.
  if (props.allocType == cudaMemAllocationTypeManaged) return cudaErrorNotSupported;
  if (props.allocType != cudaMemAllocationTypePinned) return cudaErrorInvalidValue;
  if (props.location.type == cudaMemLocationTypeHost ||
      props.location.type == cudaMemLocationTypeHostNuma) {
    return cudaErrorNotSupported;
  }
  if (props.location.type != cudaMemLocationTypeDevice || !valid_device(props.location.id)) {
    return cudaErrorInvalidValue;
  }
  // Linux pools can be exported as file descriptors (not that the simulation exports any);
  // Windows handles and fabric handles are not available.
  if ((props.handleTypes & ~cudaMemHandleTypePosixFileDescriptor) != 0) {
    return cudaErrorNotSupported;
  }
  if (props.win32SecurityAttributes != nullptr) return cudaErrorInvalidValue;
  for (const unsigned char byte : props.reserved) {
    if (byte != 0) return cudaErrorInvalidValue;
  }

  std::lock_guard lock(mutex_);
  auto pool = std::make_unique<CUmemPoolHandle_st>(CUmemPoolHandle_st{
      .device = props.location.id, .is_default = false, .max_size = props.maxSize});
  *out = pool.get();
  pools_.emplace(pool.get(), std::move(pool));
  return cudaSuccess;
}

cudaError_t Runtime::destroy_pool(cudaMemPool_t pool) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool) || pool->is_default) return cudaErrorInvalidValue;
  if (pool->live_count == 0) {
    pools_.erase(pool);
  } else {
    pool->destroyed = true;  // released by release_locked with its last allocation
  }
  return cudaSuccess;
}

cudaError_t Runtime::check_pool(cudaMemPool_t pool) {
  std::lock_guard lock(mutex_);
  return pool_usable_locked(pool) ? cudaSuccess : cudaErrorInvalidValue;
}

void Runtime::reset_device(int device) {
  std::lock_guard lock(mutex_);
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

cudaError_t Runtime::allocate_locked(int device, std::size_t size, AllocationKind kind,
                                     CUmemPoolHandle_st* pool, void** out) {
  // A zero-byte request succeeds with a null pointer and takes nothing, as in the real runtime
  // (whose cudaMallocManaged refuses it; the caller checks that).
  if (size == 0) {
    *out = nullptr;
    return cudaSuccess;
  }
  const std::optional<std::size_t> reserved = Arena::round_up(size);
  if (!reserved) return cudaErrorMemoryAllocation;
  if (pool != nullptr && pool->max_size != 0 &&
      (*reserved > pool->max_size || pool->live_bytes > pool->max_size - *reserved)) {
    return cudaErrorMemoryAllocation;
  }
  std::byte* ptr = devices_[device].arena->allocate(*reserved);
  if (ptr == nullptr) return cudaErrorMemoryAllocation;
  allocations_.emplace(
      address(ptr),
      Allocation{
          .size = size, .reserved = *reserved, .kind = kind, .device = device, .pool = pool});
  if (pool != nullptr) {
    ++pool->live_count;
    pool->live_bytes += *reserved;
  }
  *out = ptr;
  return cudaSuccess;
}

void Runtime::release_locked(Allocations::iterator allocation) {
  auto* const ptr = reinterpret_cast<std::byte*>(allocation->first);
  const Allocation& info = allocation->second;
  if (info.kind == AllocationKind::PinnedHost) {
    munmap(ptr, info.reserved);
  } else {
    devices_[info.device].arena->release(ptr, info.reserved);
  }
  if (CUmemPoolHandle_st* pool = info.pool) {
    --pool->live_count;
    pool->live_bytes -= info.reserved;
    if (pool->destroyed && pool->live_count == 0) pools_.erase(pool);
  }
  allocations_.erase(allocation);
}

std::optional<int> Runtime::stream_device_locked(cudaStream_t stream, int current_device) const {
  if (is_implicit_stream(stream)) return current_device;
  const auto found = streams_.find(stream);
  if (found == streams_.end()) return std::nullopt;
  return found->second->device;
}

bool Runtime::pool_usable_locked(cudaMemPool_t pool) const {
  const auto found = pools_.find(pool);
  return found != pools_.end() && !found->second->destroyed;
}

const Allocation* Runtime::find_containing_locked(const void* ptr, std::size_t count) const {
  auto after = allocations_.upper_bound(address(ptr));
  if (after == allocations_.begin()) return nullptr;
  const auto& [start, allocation] = *std::prev(after);
  const std::uintptr_t offset = address(ptr) - start;
  if (offset >= allocation.size || count > allocation.size - offset) return nullptr;
  return &allocation;
}

bool Runtime::inside_any_arena(const void* ptr) const {
  for (const Device& device : devices_) {
    if (device.arena->contains(ptr)) return true;
  }
  return false;
}

}  // namespace simcuda
