// The state of the simulated machine: devices with their arenas, live allocations, streams and
// memory pools. Every public method takes the one lock, so each CUDA call is atomic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "arena.h"
#include "config.h"
#include "cuda_runtime_api.h"

// The structs behind the opaque handles of the public header. Handles are only dereferenced
// after they were found in the runtime's tables, so a stale or made-up handle is an error
// code, not a crash.
struct CUstream_st {
  int device;
  unsigned int flags;
};

struct CUmemPoolHandle_st {
  int device;
  bool is_default;
  std::size_t max_size;  // 0: limited only by the device
  std::size_t live_count = 0;
  std::size_t live_bytes = 0;
  // cudaMemPoolDestroy was called while allocations were live: the handle is no longer
  // usable, and the pool goes away with its last allocation, as the real one does.
  bool destroyed = false;
};

namespace simcuda {

enum class AllocationKind { Device, Managed, Async, PinnedHost };

struct Allocation {
  std::size_t size;      // as requested; memset/memcpy may not go past it
  std::size_t reserved;  // as taken from the arena (or mapped, for host memory)
  AllocationKind kind;
  int device;                // for pinned host memory: the device current when it was allocated
  CUmemPoolHandle_st* pool;  // the pool of an Async allocation, else nullptr
};

class Runtime {
 public:
  // The process-wide instance, built from the environment on first use and never destroyed:
  // CUDA calls made from static destructors or atexit handlers still find it.
  static Runtime& get();

  explicit Runtime(const ConfigResult& config);

  // What every call that needs a device returns before doing anything: cudaSuccess,
  // cudaErrorNoDevice (SIMCUDA_NO_DEVICE=1 or no devices) or cudaErrorInitializationError
  // (a malformed SIMCUDA_* variable, or address space that could not be reserved).
  cudaError_t init_error() const { return init_error_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  bool valid_device(int device) const { return device >= 0 && device < device_count(); }

  // Device memory of `kind` (Device or Managed) on `device`.
  cudaError_t allocate(int device, std::size_t size, AllocationKind kind, void** out);
  // Device, managed or stream-ordered memory, whichever call allocated it.
  cudaError_t free_device_memory(void* ptr);
  cudaError_t allocate_host(int device, std::size_t size, void** out);
  cudaError_t free_host_memory(void* ptr);

  // The stream-ordered allocator. Work is never deferred, so the stream only needs to exist.
  cudaError_t allocate_async(int current_device, std::size_t size, cudaStream_t stream, void** out);
  cudaError_t allocate_from_pool(cudaMemPool_t pool, std::size_t size, cudaStream_t stream,
                                 void** out);
  cudaError_t free_async(void* ptr, cudaStream_t stream);

  cudaError_t copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind);
  cudaError_t fill(void* dst, int value, std::size_t count);
  void memory_info(int device, std::size_t* free_bytes, std::size_t* total_bytes);

  cudaError_t create_stream(int device, unsigned int flags, cudaStream_t* out);
  cudaError_t destroy_stream(cudaStream_t stream);
  cudaError_t check_stream(cudaStream_t stream);

  cudaError_t create_pool(const cudaMemPoolProps& props, cudaMemPool_t* out);
  cudaError_t destroy_pool(cudaMemPool_t pool);
  cudaError_t check_pool(cudaMemPool_t pool);
  cudaMemPool_t default_pool(int device) const { return devices_[device].default_pool; }

  // Frees everything that belongs to `device`: its memory, streams and created pools.
  void reset_device(int device);

 private:
  struct Device {
    std::unique_ptr<Arena> arena;
    CUmemPoolHandle_st* default_pool;  // owned by pools_
  };
  using Allocations = std::map<std::uintptr_t, Allocation>;

  cudaError_t allocate_locked(int device, std::size_t size, AllocationKind kind,
                              CUmemPoolHandle_st* pool, void** out);
  void release_locked(Allocations::iterator allocation);
  std::optional<int> stream_device_locked(cudaStream_t stream, int current_device) const;
  bool pool_usable_locked(cudaMemPool_t pool) const;
  // The live allocation containing [ptr, ptr + count), if any.
  const Allocation* find_containing_locked(const void* ptr, std::size_t count) const;
  bool inside_any_arena(const void* ptr) const;

  std::mutex mutex_;
  cudaError_t init_error_ = cudaSuccess;
  std::vector<Device> devices_;
  Allocations allocations_;  // by start address; device and host memory alike
  std::unordered_map<cudaStream_t, std::unique_ptr<CUstream_st>> streams_;
  std::unordered_map<cudaMemPool_t, std::unique_ptr<CUmemPoolHandle_st>> pools_;
};

}  // namespace simcuda
