// The state of the simulated driver: devices with their memory, primary contexts, live
// allocations (registered host memory included), streams, events, memory pools and the virtual
// memory API. Every public method takes the
// one lock, so each driver call is atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arena.h"
#include "config.h"
#include "cuda.h"
#include "handles.h"
#include "physical_memory.h"
#include "virtual_memory.h"

namespace simcuda::driver {

// What the simulated driver reports from cuDriverGetVersion: it supports the CUDA 13.0 API.
inline constexpr int kDriverVersion = 13000;

// Stream priorities, as on real GPUs: lower numbers are greater priorities.
inline constexpr int kLeastStreamPriority = 0;
inline constexpr int kGreatestStreamPriority = -5;

// Registered is host memory of the program's that cuMemHostRegister registered. Module is the
// device memory a loaded module takes for its code, constants and globals: addressable (a
// global can be copied to), freed only by unloading the module.
enum class AllocationKind { Device, Managed, Async, PinnedHost, Registered, Module };

struct Allocation {
  std::size_t size;      // as requested; copies and memsets may not go past it
  std::size_t reserved;  // as taken from the heap (or mapped, for host memory)
  AllocationKind kind;
  int device;                   // for host memory: the device of the current context
  CUmemPoolHandle_st* pool;     // the pool of an Async allocation, else nullptr
  std::uint64_t buffer_id = 0;  // unique for the life of the process
};

// What cuPointerGetAttribute(s) and cuMemGetAddressRange answer about a known address.
struct PointerInfo {
  AllocationKind kind;  // Device for memory mapped by cuMemMap
  bool mapped_by_vmm;
  int device;
  std::uintptr_t start;  // of the allocation or mapping
  std::size_t size;
  std::uint64_t buffer_id;
  unsigned int handle_types;  // what cuMemExportToShareableHandle could export
  CUmemoryPool pool;
  CUcontext context;  // null for cuMemMap's memory, which belongs to no context
};

// What one side of a copy may be: cuMemcpyHtoD's destination must be device memory, its source
// may be anything (and cuMemcpy, through unified addressing, takes anything on both sides).
// Whatever the side, memory in a device's address space must be live and accessible.
enum class Side { Any, Device };

class Driver {
 public:
  // The process-wide instance, never destroyed: driver calls made from static destructors or
  // atexit handlers still find it.
  static Driver& get();

  // cuInit. The first call reads the SIMCUDA_* environment and builds the machine; every call
  // returns the outcome of that first one.
  CUresult init();
  // What every call that needs cuInit returns before doing anything: CUDA_SUCCESS once cuInit
  // has succeeded, CUDA_ERROR_NOT_INITIALIZED before that or when it failed.
  CUresult initialized() const;

  int device_count() const { return static_cast<int>(devices_.size()); }
  bool valid_device(int device) const { return device >= 0 && device < device_count(); }
  std::size_t total_memory(int device) const { return devices_[device]->capacity; }

  // Primary contexts.
  CUcontext retain_primary(int device);
  CUresult release_primary(int device);
  void reset_primary(int device);
  // The context `ctx` stands for, or nullptr when it is none of the primary contexts.
  CUctx_st* find_context(CUcontext ctx);
  // The calling thread's current context (nullptr: none): the top of its context stack.
  // cuCtxSetCurrent replaces the top (null pops it), cuCtxPushCurrent and cuCtxPopCurrent push
  // and pop.
  static CUcontext current_context();
  static void set_current_context(CUctx_st* ctx);
  static void push_current_context(CUctx_st* ctx);
  static CUctx_st* pop_current_context();  // nullptr when the stack is empty
  CUcontext primary_context(int device) { return &devices_[device]->primary; }
  void primary_state(int device, unsigned int* flags, int* active);
  void set_primary_flags(int device, unsigned int flags);
  unsigned int context_flags(int device);
  CUresult enable_peer_access(int device, CUcontext peer);
  CUresult disable_peer_access(int device, CUcontext peer);

  // The device of `ctx`, or of the calling thread's current context when `ctx` is null:
  // CUDA_ERROR_INVALID_CONTEXT when there is none or it is no context, and
  // CUDA_ERROR_CONTEXT_IS_DESTROYED when all who retained it released it.
  CUresult context_device(CUcontext ctx, int* device);

  // Device memory of `kind` (Device or Managed) on `device`; `size` > 0.
  CUresult allocate(int device, std::size_t size, AllocationKind kind, CUdeviceptr* out);
  // Device, managed or stream-ordered memory, whichever call allocated it.
  CUresult free_device_memory(CUdeviceptr ptr);
  // A module's memory (AllocationKind::Module), given back when the module is unloaded.
  void free_module_memory(CUdeviceptr ptr);
  CUresult allocate_host(int device, std::size_t size, void** out);
  CUresult free_host_memory(void* ptr);
  void memory_info(int device, std::size_t* free_bytes, std::size_t* total_bytes);

  // The stream-ordered allocator. Work is never deferred, so the stream only needs to exist.
  CUresult allocate_async(int current_device, std::size_t size, CUstream stream, CUdeviceptr* out);
  CUresult allocate_from_pool(CUmemoryPool pool, std::size_t size, CUstream stream,
                              CUdeviceptr* out);
  CUresult free_async(CUdeviceptr ptr, CUstream stream);

  CUresult copy(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side,
                std::size_t count);
  CUresult fill(std::uintptr_t dst, unsigned char value, std::size_t count);
  // `count` 32-bit values (cuMemsetD32; cuStreamWriteValue32 writes one).
  CUresult fill32(std::uintptr_t dst, std::uint32_t value, std::size_t count);

  // cuMemHostRegister: the range must not overlap pinned or registered memory.
  CUresult register_host(int device, void* ptr, std::size_t size);
  CUresult unregister_host(void* ptr);
  // A pointer into pinned or registered host memory: its device pointer, the same address.
  CUresult host_device_pointer(void* ptr, CUdeviceptr* out);
  // Device, managed, stream-ordered, pinned or registered memory, or a cuMemMap mapping, that
  // holds `ptr`.
  std::optional<PointerInfo> pointer_info(std::uintptr_t ptr);

  CUresult create_stream(int device, unsigned int flags, int priority, CUstream* out);
  CUresult destroy_stream(CUstream stream);
  CUresult check_stream(CUstream stream);
  // A created stream's flags, priority and device; for the implicit streams, 0, 0 and
  // `current_device`.
  CUresult stream_properties(CUstream stream, int current_device, unsigned int* flags,
                             int* priority, int* device);

  CUresult create_event(int device, unsigned int flags, CUevent* out);
  CUresult destroy_event(CUevent event);
  CUresult check_event(CUevent event);
  CUresult record_event(CUevent event, CUstream stream);
  CUresult elapsed_time(CUevent start, CUevent end, float* milliseconds);

  CUresult create_pool(const CUmemPoolProps& props, CUmemoryPool* out);
  CUresult destroy_pool(CUmemoryPool pool);
  CUresult check_pool(CUmemoryPool pool);
  CUresult trim_pool(CUmemoryPool pool, std::size_t keep);
  // A synchronization (context, stream or event): every pool holding more than its release
  // threshold gives the excess back, as the real driver does then.
  void release_pools_over_threshold();
  CUmemoryPool default_pool(int device) const { return devices_[device]->default_pool; }
  CUresult pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value);
  CUresult set_pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, const void* value);
  // `desc` holds `count` descriptors of valid devices with valid flags.
  CUresult set_pool_access(CUmemoryPool pool, const CUmemAccessDesc* desc, std::size_t count);
  CUresult pool_access(CUmemoryPool pool, int device, CUmemAccess_flags* out);

  // The virtual memory API (virtual_memory.h), plus the capacity check of cuMemCreate.
  CUresult reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint, CUdeviceptr* out);
  CUresult free_reservation(CUdeviceptr ptr, std::size_t size);
  CUresult create_physical(int device, std::size_t size, const CUmemAllocationProp& prop,
                           CUmemGenericAllocationHandle* out);
  CUresult release_physical(CUmemGenericAllocationHandle handle);
  CUresult physical_properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp* out);
  CUresult map(CUdeviceptr ptr, std::size_t size, std::size_t offset,
               CUmemGenericAllocationHandle handle);
  CUresult unmap(CUdeviceptr ptr, std::size_t size);
  CUresult set_access(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc,
                      std::size_t count);
  CUresult retain_handle(std::uintptr_t address, CUmemGenericAllocationHandle* out);
  CUresult export_descriptor(CUmemGenericAllocationHandle handle, int* out);

 private:
  struct Device {
    Device(int ordinal, std::size_t bytes, std::unique_ptr<Arena> device_heap)
        : capacity(bytes),
          heap(std::move(device_heap)),
          physical(bytes),
          primary{.device = ordinal} {}

    std::size_t capacity;
    std::unique_ptr<Arena> heap;  // cuMemAlloc and the rest of the classic allocators
    PhysicalMemory physical;      // cuMemCreate
    CUctx_st primary;
    CUmemPoolHandle_st* default_pool = nullptr;  // owned by pools_
    // What the device's pools hold beyond their live allocations' footprint.
    std::size_t pool_slack = 0;
    // What is taken of the capacity: the heap's and cuMemCreate's allocations, and what the
    // pools hold unused.
    std::size_t committed() const { return heap->used() + physical.used_bytes() + pool_slack; }
  };
  using Allocations = std::map<std::uintptr_t, Allocation>;

  CUresult build_machine();
  CUresult allocate_locked(int device, std::size_t size, AllocationKind kind,
                           CUmemPoolHandle_st* pool, CUdeviceptr* out);
  void release_locked(Allocations::iterator allocation);
  // Gives the pool's unused granules back, keeping at least KEEP bytes (rounded up to granules)
  // and always its footprint.
  void trim_pool_locked(CUmemPoolHandle_st& pool, std::uint64_t keep);
  void forget_pool_locked(CUmemPoolHandle_st& pool);
  void reset_primary_locked(int device);
  std::optional<int> stream_device_locked(CUstream stream, int current_device) const;
  bool pool_usable_locked(CUmemoryPool pool) const;
  // The live allocation in a heap containing [ptr, ptr + count), if any.
  const Allocation* find_containing_locked(std::uintptr_t ptr, std::size_t count) const;
  bool inside_any_heap(std::uintptr_t ptr) const;
  // Whether [ptr, ptr + count) may be read (or written) as `side` memory.
  bool usable_locked(std::uintptr_t ptr, std::size_t count, Side side, bool write) const;

  std::once_flag init_once_;
  // Written once, by the first cuInit; read by every call. The machine built by that cuInit is
  // read-only afterwards (its parts have their own state, under mutex_).
  std::atomic<CUresult> init_result_ = CUDA_ERROR_NOT_INITIALIZED;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<VirtualMemory> virtual_memory_;
  Allocations allocations_;  // by start address; device and host memory alike
  std::unordered_map<CUstream, std::unique_ptr<CUstream_st>> streams_;
  std::unordered_map<CUevent, std::unique_ptr<CUevent_st>> events_;
  std::uint64_t next_buffer_id_ = 1;
  std::unordered_map<CUmemoryPool, std::unique_ptr<CUmemPoolHandle_st>> pools_;
};

}  // namespace simcuda::driver
