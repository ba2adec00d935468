// libc10_cuda_sim.so: see include/c10_cuda_sim.h.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <unordered_map>

#include "c10_cuda_sim.h"
#include "c10_profiler_abi.h"

namespace {

constexpr size_t kMinBlockSize = 512;             // every size is a multiple of it
constexpr size_t kSmallSize = size_t{1} << 20;    // largest request of the small pool
constexpr size_t kSmallBuffer = size_t{2} << 20;  // the small pool's segment size
constexpr size_t kRoundLarge = size_t{2} << 20;   // large segments: a multiple of it
constexpr int kMaxDevices = 16;

struct Block {
  char* ptr;
  size_t size;
  bool allocated = false;
  bool small;
  char* segment;          // the base of the cudaMalloc holding it
  Block* prev = nullptr;  // neighbours in the segment
  Block* next = nullptr;
  int device;
};

struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

struct DeviceState {
  std::set<Block*, BySize> small_free, large_free;
  std::unordered_map<char*, size_t> segments;  // base -> size
  uint64_t allocated = 0, reserved = 0, active = 0;
};

std::mutex g_mutex;
DeviceState g_devices[kMaxDevices];
std::unordered_map<void*, Block*> g_active;  // handed-out blocks by address

size_t round_size(size_t size) {
  return size < kMinBlockSize ? kMinBlockSize
                              : kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

size_t segment_size(size_t rounded) {
  return rounded <= kSmallSize ? kSmallBuffer
                               : kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

c10::Device cuda(int device) {
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
}

std::set<Block*, BySize>& pool_of(DeviceState& d, bool small) {
  return small ? d.small_free : d.large_free;
}

// Gives every wholly free segment of every device back to CUDA. Call with g_mutex held.
void release_cached_segments() {
  for (int device = 0; device < kMaxDevices; ++device) {
    DeviceState& d = g_devices[device];
    for (auto* pool : {&d.small_free, &d.large_free}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        auto segment = d.segments.find(b->ptr);
        if (b->prev == nullptr && b->next == nullptr && segment != d.segments.end() &&
            segment->second == b->size) {
          if (cudaSetDevice(device) == cudaSuccess && cudaFree(b->ptr) == cudaSuccess) {
            d.reserved -= b->size;
            d.segments.erase(segment);
            it = pool->erase(it);
            delete b;
            continue;
          }
        }
        ++it;
      }
    }
  }
}

// A free block of at least `rounded` bytes from the pool, or a new segment. Call with g_mutex
// held. Null when CUDA has no memory left.
Block* find_or_make_block(DeviceState& d, int device, size_t rounded, bool small) {
  auto& pool = pool_of(d, small);
  Block key{};
  key.size = rounded;
  key.ptr = nullptr;
  auto it = pool.lower_bound(&key);
  if (it != pool.end()) {
    Block* b = *it;
    pool.erase(it);
    return b;
  }
  const size_t bytes = segment_size(rounded);
  void* base = nullptr;
  if (cudaSetDevice(device) != cudaSuccess) return nullptr;
  if (cudaMalloc(&base, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // as PyTorch does: an OOM is not the program's sticky error
    return nullptr;
  }
  auto* b = new Block{static_cast<char*>(base), bytes,   false,   small,
                      static_cast<char*>(base), nullptr, nullptr, device};
  d.segments[b->ptr] = bytes;
  d.reserved += bytes;
  return b;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* sim_alloc(size_t size, int device) {
  if (size == 0 || device < 0 || device >= kMaxDevices) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceState& d = g_devices[device];
  const size_t rounded = round_size(size);
  const bool small = rounded <= kSmallSize;
  Block* b = find_or_make_block(d, device, rounded, small);
  if (b == nullptr) {
    release_cached_segments();
    b = find_or_make_block(d, device, rounded, small);
  }
  if (b == nullptr) {
    c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(rounded), d.allocated, d.reserved,
                                     cuda(device));
    return nullptr;
  }
  const size_t remaining = b->size - rounded;
  if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) {
    auto* rest =
        new Block{b->ptr + rounded, remaining, false, small, b->segment, b, b->next, device};
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = rounded;
    pool_of(d, small).insert(rest);
  }
  b->allocated = true;
  g_active[b->ptr] = b;
  d.allocated += b->size;
  d.active += 1;
  c10::reportMemoryUsageToProfiler(b->ptr, static_cast<int64_t>(b->size), d.allocated, d.reserved,
                                   cuda(device));
  return b->ptr;
}

extern "C" __attribute__((visibility("default"))) int sim_free(void* ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto found = g_active.find(ptr);
  if (found == g_active.end()) return -1;
  Block* b = found->second;
  g_active.erase(found);
  DeviceState& d = g_devices[b->device];
  b->allocated = false;
  d.allocated -= b->size;
  d.active -= 1;
  c10::reportMemoryUsageToProfiler(b->ptr, -static_cast<int64_t>(b->size), d.allocated, d.reserved,
                                   cuda(b->device));
  // Merge with free neighbours of the same segment.
  auto& pool = pool_of(d, b->small);
  for (Block* neighbour : {b->prev, b->next}) {
    if (neighbour == nullptr || neighbour->allocated) continue;
    pool.erase(neighbour);
    if (neighbour == b->prev) {
      neighbour->size += b->size;
      neighbour->next = b->next;
      if (b->next != nullptr) b->next->prev = neighbour;
      delete b;
      b = neighbour;
    } else {
      b->size += neighbour->size;
      b->next = neighbour->next;
      if (neighbour->next != nullptr) neighbour->next->prev = b;
      delete neighbour;
    }
  }
  pool.insert(b);
  return 0;
}

extern "C" __attribute__((visibility("default"))) void sim_empty_cache(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  release_cached_segments();
}

extern "C" __attribute__((visibility("default"))) int sim_stats(int device,
                                                                sim_allocator_stats* out) {
  if (device < 0 || device >= kMaxDevices || out == nullptr) return -1;
  std::lock_guard<std::mutex> lock(g_mutex);
  const DeviceState& d = g_devices[device];
  out->allocated_bytes = d.allocated;
  out->reserved_bytes = d.reserved;
  out->active_blocks = d.active;
  out->segments = d.segments.size();
  return 0;
}
