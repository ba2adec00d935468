#include "driver.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>

namespace simcuda::driver {
namespace {

// A stream-ordered pool takes memory from the device in steps of this size: measured on an H200
// (driver 580), a pool holding nothing reserves 32 MiB for a 1-byte allocation, 64 MiB for
// 32 MiB + 1, and 96 MiB for 64 MiB + 4 (samples/torch/pool_probe.py).
constexpr std::size_t kPoolGranule = std::size_t{32} << 20;

// Saturates: a size past the last whole granule (cuMemPoolTrimTo's SIZE_MAX) stays the largest.
std::size_t round_up_to_granule(std::uint64_t bytes) {
  constexpr std::uint64_t kLast = std::numeric_limits<std::size_t>::max() / kPoolGranule;
  const std::uint64_t granules = bytes / kPoolGranule + (bytes % kPoolGranule != 0 ? 1 : 0);
  if (granules > kLast) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(granules * kPoolGranule);
}

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
  return kind == AllocationKind::Device || kind == AllocationKind::Managed ||
         kind == AllocationKind::Async || kind == AllocationKind::Module;
}

// What cuMemFree and cuMemFreeAsync may free: not a module's memory.
bool freeable(AllocationKind kind) {
  return in_heap(kind) && kind != AllocationKind::Module;
}

bool is_host(AllocationKind kind) {
  return kind == AllocationKind::PinnedHost || kind == AllocationKind::Registered;
}

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
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

// The context stack is per host thread; its top is the current context. A thread_local with a
// destructor would keep the library loaded until every thread that touched it exits (glibc
// counts such objects against dlclose), and programs unload and reload the driver. So each
// thread's stack is allocated at its first use, found through a trivially destructible
// thread_local, and freed at the thread's exit by a pthread key's destructor, which does not
// pin the library; the key goes with the library (forget_context_stack_key).
thread_local std::vector<CUctx_st*>* t_context_stack_storage = nullptr;
pthread_key_t g_context_stack_key;
pthread_once_t g_context_stack_key_once = PTHREAD_ONCE_INIT;
bool g_context_stack_key_made = false;

void free_context_stack(void* stack) {
  delete static_cast<std::vector<CUctx_st*>*>(stack);
}

void make_context_stack_key() {
  g_context_stack_key_made = pthread_key_create(&g_context_stack_key, free_context_stack) == 0;
}

// At dlclose (and exit): no destructor may point into the unloaded library. Stacks of threads
// still running are left to the process.
__attribute__((destructor)) void forget_context_stack_key() {
  if (g_context_stack_key_made) pthread_key_delete(g_context_stack_key);
  g_context_stack_key_made = false;
}

std::vector<CUctx_st*>& context_stack() {
  if (t_context_stack_storage == nullptr) {
    t_context_stack_storage = new std::vector<CUctx_st*>;
    pthread_once(&g_context_stack_key_once, make_context_stack_key);
    if (g_context_stack_key_made) pthread_setspecific(g_context_stack_key, t_context_stack_storage);
  }
  return *t_context_stack_storage;
}

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
  std::erase_if(events_, [device](const auto& entry) { return entry.second->device == device; });
  // Peer access is a property of the two contexts, gone with either.
  devices_[device]->primary.peers.clear();
  for (const auto& other : devices_) other->primary.peers.erase(device);
  // Created pools of the device go too, even those already destroyed; the default pool stays,
  // holding nothing.
  std::vector<CUmemPoolHandle_st*> created;
  for (const auto& [handle, pool] : pools_) {
    if (pool->device != device) continue;
    if (pool->is_default) {
      trim_pool_locked(*pool, 0);
    } else {
      created.push_back(pool.get());
    }
  }
  for (CUmemPoolHandle_st* pool : created) forget_pool_locked(*pool);
}

CUctx_st* Driver::find_context(CUcontext ctx) {
  for (const auto& device : devices_) {
    if (ctx == &device->primary) return &device->primary;
  }
  return nullptr;
}

CUcontext Driver::current_context() {
  // Asked before every call that needs a context: no allocation for a thread that has none.
  if (t_context_stack_storage == nullptr || t_context_stack_storage->empty()) return nullptr;
  return t_context_stack_storage->back();
}

void Driver::set_current_context(CUctx_st* ctx) {
  std::vector<CUctx_st*>& stack = context_stack();
  // As documented: replace the top of the stack; null pops it (nothing, on an empty stack).
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
  } else if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
}

void Driver::push_current_context(CUctx_st* ctx) {
  std::vector<CUctx_st*>& stack = context_stack();
  stack.push_back(ctx);
}

CUctx_st* Driver::pop_current_context() {
  std::vector<CUctx_st*>& stack = context_stack();
  if (stack.empty()) return nullptr;
  CUctx_st* const top = stack.back();
  stack.pop_back();
  return top;
}

void Driver::primary_state(int device, unsigned int* flags, int* active) {
  std::lock_guard lock(mutex_);
  const CUctx_st& context = devices_[device]->primary;
  *flags = context.flags;
  *active = context.retains > 0 ? 1 : 0;
}

void Driver::set_primary_flags(int device, unsigned int flags) {
  std::lock_guard lock(mutex_);
  devices_[device]->primary.flags = flags;
}

unsigned int Driver::context_flags(int device) {
  std::lock_guard lock(mutex_);
  return devices_[device]->primary.flags;
}

CUresult Driver::enable_peer_access(int device, CUcontext peer) {
  std::lock_guard lock(mutex_);
  CUctx_st* const context = find_context(peer);
  if (context == nullptr || context->retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // A device is no peer of itself (cuDeviceCanAccessPeer answers 0).
  if (context->device == device) return CUDA_ERROR_INVALID_DEVICE;
  if (!devices_[device]->primary.peers.insert(context->device).second) {
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  return CUDA_SUCCESS;
}

CUresult Driver::disable_peer_access(int device, CUcontext peer) {
  std::lock_guard lock(mutex_);
  CUctx_st* const context = find_context(peer);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return devices_[device]->primary.peers.erase(context->device) == 1
             ? CUDA_SUCCESS
             : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

CUresult Driver::context_device(CUcontext ctx, int* device) {
  CUctx_st* const context = ctx == nullptr ? current_context() : find_context(ctx);
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
  if (allocation == allocations_.end() || !freeable(allocation->second.kind)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_locked(allocation);
  return CUDA_SUCCESS;
}

void Driver::free_module_memory(CUdeviceptr ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(ptr);
  if (allocation != allocations_.end() && allocation->second.kind == AllocationKind::Module) {
    release_locked(allocation);
  }
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
                                  .pool = nullptr,
                                  .buffer_id = next_buffer_id_++});
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
  if (allocation == allocations_.end() || !freeable(allocation->second.kind)) {
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

CUresult Driver::fill32(std::uintptr_t dst, std::uint32_t value, std::size_t count) {
  // As documented, the destination of 32-bit values is 4-byte aligned.
  if (dst % sizeof value != 0) return CUDA_ERROR_INVALID_VALUE;
  if (count == 0) return CUDA_SUCCESS;
  if (count > std::numeric_limits<std::size_t>::max() / sizeof value) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(mutex_);
  if (!usable_locked(dst, count * sizeof value, Side::Device, true))
    return CUDA_ERROR_INVALID_VALUE;
  auto* const out = static_cast<std::byte*>(as_pointer(dst));
  for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * sizeof value, &value, sizeof value);
  return CUDA_SUCCESS;
}

CUresult Driver::register_host(int device, void* ptr, std::size_t size) {
  const auto start = reinterpret_cast<std::uintptr_t>(ptr);
  if (ptr == nullptr || size == 0 || size > std::numeric_limits<std::uintptr_t>::max() - start) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(mutex_);
  // Device memory is no host memory to register.
  if (inside_any_heap(start) || virtual_memory_->contains(start)) return CUDA_ERROR_INVALID_VALUE;
  // Host memory the driver already knows (pinned or registered) cannot be registered again.
  for (auto it = allocations_.lower_bound(start + size); it != allocations_.begin();) {
    --it;
    const auto& [other_start, other] = *it;
    if (is_host(other.kind) && other_start + other.reserved > start) {
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (other_start <= start) break;
  }
  allocations_.emplace(start, Allocation{.size = size,
                                         .reserved = size,
                                         .kind = AllocationKind::Registered,
                                         .device = device,
                                         .pool = nullptr,
                                         .buffer_id = next_buffer_id_++});
  return CUDA_SUCCESS;
}

CUresult Driver::unregister_host(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto allocation = allocations_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (allocation == allocations_.end() || allocation->second.kind != AllocationKind::Registered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  release_locked(allocation);
  return CUDA_SUCCESS;
}

CUresult Driver::host_device_pointer(void* ptr, CUdeviceptr* out) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  const Allocation* allocation = find_containing_locked(address, 1);
  if (allocation == nullptr || !is_host(allocation->kind)) return CUDA_ERROR_INVALID_VALUE;
  // Unified addressing: the device sees host memory at its host address.
  *out = address;
  return CUDA_SUCCESS;
}

std::optional<PointerInfo> Driver::pointer_info(std::uintptr_t ptr) {
  std::lock_guard lock(mutex_);
  if (virtual_memory_->contains(ptr)) {
    const auto mapping = virtual_memory_->mapping_containing(ptr);
    if (!mapping) return std::nullopt;
    return PointerInfo{.kind = AllocationKind::Device,
                       .mapped_by_vmm = true,
                       .device = mapping->device,
                       .start = mapping->start,
                       .size = mapping->size,
                       .buffer_id = mapping->buffer_id,
                       .handle_types = mapping->handle_types,
                       .pool = nullptr,
                       .context = nullptr};
  }
  auto after = allocations_.upper_bound(ptr);
  if (after == allocations_.begin()) return std::nullopt;
  const auto& [start, allocation] = *std::prev(after);
  if (ptr - start >= allocation.size) return std::nullopt;
  return PointerInfo{.kind = allocation.kind,
                     .mapped_by_vmm = false,
                     .device = allocation.device,
                     .start = start,
                     .size = allocation.size,
                     .buffer_id = allocation.buffer_id,
                     .handle_types = allocation.pool != nullptr ? allocation.pool->handle_types : 0,
                     .pool = allocation.pool,
                     .context = &devices_[allocation.device]->primary};
}

CUresult Driver::fill(std::uintptr_t dst, unsigned char value, std::size_t count) {
  if (count == 0) return CUDA_SUCCESS;
  std::lock_guard lock(mutex_);
  if (!usable_locked(dst, count, Side::Device, true)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(as_pointer(dst), value, count);
  return CUDA_SUCCESS;
}

CUresult Driver::create_stream(int device, unsigned int flags, int priority, CUstream* out) {
  std::lock_guard lock(mutex_);
  auto stream = std::make_unique<CUstream_st>(
      CUstream_st{.device = device, .flags = flags, .priority = priority});
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

CUresult Driver::stream_properties(CUstream stream, int current_device, unsigned int* flags,
                                   int* priority, int* device) {
  std::lock_guard lock(mutex_);
  if (is_implicit_stream(stream)) {
    *flags = CU_STREAM_DEFAULT;
    *priority = 0;
    *device = current_device;
    return CUDA_SUCCESS;
  }
  const auto found = streams_.find(stream);
  if (found == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *flags = found->second->flags;
  *priority = found->second->priority;
  *device = found->second->device;
  return CUDA_SUCCESS;
}

CUresult Driver::create_event(int device, unsigned int flags, CUevent* out) {
  std::lock_guard lock(mutex_);
  auto event = std::make_unique<CUevent_st>(CUevent_st{.device = device, .flags = flags});
  *out = event.get();
  events_.emplace(event.get(), std::move(event));
  return CUDA_SUCCESS;
}

CUresult Driver::destroy_event(CUevent event) {
  std::lock_guard lock(mutex_);
  return events_.erase(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Driver::check_event(CUevent event) {
  std::lock_guard lock(mutex_);
  return events_.contains(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Driver::record_event(CUevent event, CUstream stream) {
  std::lock_guard lock(mutex_);
  const auto found = events_.find(event);
  if (found == events_.end() || !stream_device_locked(stream, 0)) return CUDA_ERROR_INVALID_HANDLE;
  // The work before it in the stream is done: the event completes as it is recorded.
  found->second->recorded = true;
  found->second->recorded_ns = monotonic_ns();
  return CUDA_SUCCESS;
}

CUresult Driver::elapsed_time(CUevent start, CUevent end, float* milliseconds) {
  std::lock_guard lock(mutex_);
  const auto first = events_.find(start);
  const auto last = events_.find(end);
  if (first == events_.end() || last == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  // As documented: both must time and both must have been recorded.
  for (const CUevent_st* event : {first->second.get(), last->second.get()}) {
    if ((event->flags & CU_EVENT_DISABLE_TIMING) != 0 || !event->recorded) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  const std::int64_t nanoseconds = last->second->recorded_ns - first->second->recorded_ns;
  *milliseconds = static_cast<float>(static_cast<double>(nanoseconds) / 1e6);
  return CUDA_SUCCESS;
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
  auto pool = std::make_unique<CUmemPoolHandle_st>(
      CUmemPoolHandle_st{.device = props.location.id,
                         .is_default = false,
                         .max_size = props.maxSize,
                         .handle_types = static_cast<unsigned int>(props.handleTypes)});
  *out = pool.get();
  pools_.emplace(pool.get(), std::move(pool));
  return CUDA_SUCCESS;
}

CUresult Driver::destroy_pool(CUmemoryPool pool) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  if (pool->live_count == 0) {
    forget_pool_locked(*pool);
  } else {
    pool->destroyed = true;  // released by release_locked with its last allocation
  }
  return CUDA_SUCCESS;
}

CUresult Driver::check_pool(CUmemoryPool pool) {
  std::lock_guard lock(mutex_);
  return pool_usable_locked(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult Driver::trim_pool(CUmemoryPool pool, std::size_t keep) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  trim_pool_locked(*pool, keep);
  return CUDA_SUCCESS;
}

void Driver::release_pools_over_threshold() {
  std::lock_guard lock(mutex_);
  for (const auto& [handle, pool] : pools_) {
    if (pool->reserved_bytes > pool->release_threshold) {
      trim_pool_locked(*pool, pool->release_threshold);
    }
  }
}

void Driver::trim_pool_locked(CUmemPoolHandle_st& pool, std::uint64_t keep) {
  const std::size_t kept =
      std::max(round_up_to_granule(pool.footprint),
               std::min<std::uint64_t>(pool.reserved_bytes, round_up_to_granule(keep)));
  if (kept >= pool.reserved_bytes) return;
  devices_[pool.device]->pool_slack -= pool.reserved_bytes - kept;
  pool.reserved_bytes = kept;
}

void Driver::forget_pool_locked(CUmemPoolHandle_st& pool) {
  // Its last allocation is gone: what it held returns to the device.
  devices_[pool.device]->pool_slack -= pool.reserved_bytes - pool.footprint;
  pools_.erase(&pool);
}

CUresult Driver::pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  const auto write_int = [value](int v) { std::memcpy(value, &v, sizeof v); };
  const auto write_u64 = [value](cuuint64_t v) { std::memcpy(value, &v, sizeof v); };
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      write_int(pool->reuse_follow_event_dependencies);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      write_int(pool->reuse_allow_opportunistic);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      write_int(pool->reuse_allow_internal_dependencies);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      write_u64(pool->release_threshold);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      write_u64(pool->reserved_bytes);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      write_u64(pool->used_bytes);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      write_u64(pool->reserved_high);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      write_u64(pool->used_high);
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult Driver::set_pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                    const void* value) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  int flag = 0;
  cuuint64_t number = 0;
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      std::memcpy(&flag, value, sizeof flag);
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      std::memcpy(&number, value, sizeof number);
      break;
    default:
      // The current amounts are read-only.
      return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      pool->reuse_follow_event_dependencies = flag != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      pool->reuse_allow_opportunistic = flag != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse_allow_internal_dependencies = flag != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      // Applied at the next synchronization.
      pool->release_threshold = number;
      break;
    default:
      // A high water mark can only be reset (to the current amount), by setting it to 0.
      if (number != 0) return CUDA_ERROR_INVALID_VALUE;
      if (attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
        pool->reserved_high = pool->reserved_bytes;
      } else {
        pool->used_high = pool->used_bytes;
      }
      break;
  }
  return CUDA_SUCCESS;
}

CUresult Driver::set_pool_access(CUmemoryPool pool, const CUmemAccessDesc* desc,
                                 std::size_t count) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    // The pool's own device always has read-write access, as documented.
    if (desc[i].location.id == pool->device &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (desc[i].location.id == pool->device) continue;
    const std::uint64_t bit = std::uint64_t{1} << desc[i].location.id;
    pool->readers &= ~bit;
    pool->writers &= ~bit;
    if ((desc[i].flags & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0) pool->readers |= bit;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) pool->writers |= bit;
  }
  return CUDA_SUCCESS;
}

CUresult Driver::pool_access(CUmemoryPool pool, int device, CUmemAccess_flags* out) {
  std::lock_guard lock(mutex_);
  if (!pool_usable_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t bit = std::uint64_t{1} << device;
  *out = device == pool->device || (pool->writers & bit) != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
         : (pool->readers & bit) != 0                         ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                                              : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
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
  return virtual_memory_->map(ptr, size, offset, handle, next_buffer_id_++);
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

CUresult Driver::retain_handle(std::uintptr_t address, CUmemGenericAllocationHandle* out) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->retain(address, out);
}

CUresult Driver::export_descriptor(CUmemGenericAllocationHandle handle, int* out) {
  std::lock_guard lock(mutex_);
  return virtual_memory_->export_descriptor(handle, out);
}

CUresult Driver::allocate_locked(int device, std::size_t size, AllocationKind kind,
                                 CUmemPoolHandle_st* pool, CUdeviceptr* out) {
  const std::optional<std::size_t> reserved = Arena::round_up(size);
  if (!reserved) return CUDA_ERROR_OUT_OF_MEMORY;
  Device& state = *devices_[device];
  // What the allocation takes of the capacity: its rounded size, or for a pool what the pool
  // must grow by (nothing when it fits in what the pool already holds).
  std::size_t taken = *reserved;
  std::size_t pool_reserved = 0;
  if (pool != nullptr) {
    const std::size_t footprint = pool->footprint + *reserved;
    if (footprint < *reserved) return CUDA_ERROR_OUT_OF_MEMORY;
    pool_reserved = std::max(pool->reserved_bytes, round_up_to_granule(footprint));
    if (pool->max_size != 0) {
      if (footprint > pool->max_size) return CUDA_ERROR_OUT_OF_MEMORY;
      pool_reserved = std::max(pool->reserved_bytes, std::min(pool_reserved, pool->max_size));
    }
    taken = pool_reserved - pool->reserved_bytes;
    // Where a whole granule does not fit, the pool takes only what the allocation needs (how
    // the real driver behaves so close to full is not measured).
    if (taken > state.capacity - state.committed() && footprint > pool->reserved_bytes) {
      pool_reserved = footprint;
      taken = pool_reserved - pool->reserved_bytes;
    }
  }
  // The heap's address range is as large as the capacity, but cuMemCreate's memory counts too.
  if (taken > state.capacity - state.committed()) return CUDA_ERROR_OUT_OF_MEMORY;
  std::byte* ptr = state.heap->allocate(*reserved);
  if (ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  allocations_.emplace(address, Allocation{.size = size,
                                           .reserved = *reserved,
                                           .kind = kind,
                                           .device = device,
                                           .pool = pool,
                                           .buffer_id = next_buffer_id_++});
  if (pool != nullptr) {
    ++pool->live_count;
    pool->used_bytes += size;
    // The heap now holds the allocation; the rest of what the pool reserves is its slack.
    state.pool_slack = state.pool_slack + (pool_reserved - pool->reserved_bytes) - *reserved;
    pool->footprint += *reserved;
    pool->reserved_bytes = pool_reserved;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved_bytes);
    pool->used_high = std::max(pool->used_high, pool->used_bytes);
  }
  *out = address;
  return CUDA_SUCCESS;
}

void Driver::release_locked(Allocations::iterator allocation) {
  auto* const ptr = reinterpret_cast<std::byte*>(allocation->first);
  const Allocation& info = allocation->second;
  if (info.kind == AllocationKind::PinnedHost) {
    munmap(ptr, info.reserved);
  } else if (info.kind == AllocationKind::Registered) {
    // The program's own memory: unregistering leaves it as it is.
  } else {
    devices_[info.device]->heap->release(ptr, info.reserved);
  }
  if (CUmemPoolHandle_st* pool = info.pool) {
    // The memory stays with the pool until it is trimmed.
    --pool->live_count;
    pool->used_bytes -= info.size;
    pool->footprint -= info.reserved;
    devices_[info.device]->pool_slack += info.reserved;
    if (pool->destroyed && pool->live_count == 0) forget_pool_locked(*pool);
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
