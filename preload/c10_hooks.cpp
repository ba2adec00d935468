// Hooks for PyTorch's caching allocator (docs/architecture.md, "Layer 3"). libc10_cuda.so reports
// every block it hands out or takes back, and every out-of-memory, by calling two functions
// that libc10.so exports (c10/core/Allocator.h):
//
//   void c10::reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
//                                         size_t total_reserved, c10::Device device);
//   void c10::reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated,
//                                         size_t total_reserved, c10::Device device);
//
// The call crosses a library boundary, so the shim's definitions, earlier in the lookup order,
// take it; each forwards to libc10.so's own. The ABI is declared here, not taken from PyTorch's
// headers: c10::Device is two int8_t (DeviceType, DeviceIndex), trivially copyable, so it is
// passed by value in a register, and the functions' mangled names are
//   _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE
//   _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE
// (tests/e2e/shim_test.cpp checks the shim exports exactly these.)
//
// Block allocation: PyTorch calls the report after the block exists, under the allocator's
// lock; a cudaMalloc the allocator made for a new segment returned before that, outside this
// hook, so both the segment and the block are recorded (on two call paths, neither nested in
// the other). Block free: recorded before forwarding, as every free is, still under the
// allocator's lock, so the block cannot be handed out again before its free is sequenced.
// Reports for devices other than CUDA (the CPU allocator reports too while PyTorch's profiler
// runs) pass through unrecorded: they are not GPU memory.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "hook_support.h"
#include "nanopb/vramtrace.pb.h"
#include "real_functions.h"

namespace c10 {

// c10/core/DeviceType.h: enum class DeviceType : int8_t; c10/core/Device.h: struct Device.
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
struct Device {
  DeviceType type_;
  int8_t index_;  // DeviceIndex; -1: the current device
};
static_assert(sizeof(Device) == 2, "c10::Device is two int8_t");

__attribute__((visibility("default"))) void reportMemoryUsageToProfiler(
    void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved, Device device);
__attribute__((visibility("default"))) void reportOutOfMemoryToProfiler(int64_t alloc_size,
                                                                        size_t total_allocated,
                                                                        size_t total_reserved,
                                                                        Device device);

}  // namespace c10

namespace {

constexpr const char* kReportMemoryUsage = "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE";
constexpr const char* kReportOutOfMemory = "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE";

using ReportMemoryUsageFn = void (*)(void*, int64_t, size_t, size_t, c10::Device);
using ReportOutOfMemoryFn = void (*)(int64_t, size_t, size_t, c10::Device);

std::atomic<void*> g_real_report_memory_usage{nullptr};
std::atomic<void*> g_real_report_out_of_memory{nullptr};

bool is_gpu(c10::Device device) {
  return device.type_ == c10::DeviceType::CUDA;
}

}  // namespace

void c10::reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
                                      size_t total_reserved, Device device) {
  using namespace vramtrace::preload;
  // libc10.so is loaded whenever this is called (the caller links it); the default
  // implementation, when none is found, does what PyTorch's does without a profiler: nothing.
  auto real = real_function<ReportMemoryUsageFn>(g_real_report_memory_usage, kReportMemoryUsage,
                                                 "libc10.so");
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording() || ptr == nullptr || alloc_size == 0 ||
      !is_gpu(device)) {
    if (real != nullptr) real(ptr, alloc_size, total_allocated, total_reserved, device);
    return;
  }
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  if (alloc_size < 0) {
    FreeEvent e{};
    e.device = device.index_;
    e.api = vramtrace_wire_Api_API_C10_REPORT_MEMORY_USAGE;
    e.address = address;
    e.size = static_cast<uint64_t>(0) - static_cast<uint64_t>(alloc_size);
    e.has_allocator_totals = true;
    e.allocator_allocated = total_allocated;
    e.allocator_reserved = total_reserved;
    record_free(e);
    if (real != nullptr) real(ptr, alloc_size, total_allocated, total_reserved, device);
    return;
  }
  if (real != nullptr) real(ptr, alloc_size, total_allocated, total_reserved, device);
  AllocEvent e{};
  e.device = device.index_;
  e.kind = vramtrace_wire_Kind_KIND_BLOCK;
  e.api = vramtrace_wire_Api_API_C10_REPORT_MEMORY_USAGE;
  e.address = address;
  e.size = static_cast<uint64_t>(alloc_size);
  e.requested_size = e.size;  // PyTorch reports the rounded size only
  e.has_allocator_totals = true;
  e.allocator_allocated = total_allocated;
  e.allocator_reserved = total_reserved;
  record_alloc(e);
}

void c10::reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated,
                                      size_t total_reserved, Device device) {
  using namespace vramtrace::preload;
  auto real = real_function<ReportOutOfMemoryFn>(g_real_report_out_of_memory, kReportOutOfMemory,
                                                 "libc10.so");
  ReentryGuard guard;
  if (guard.outermost() && is_recording() && is_gpu(device)) {
    AllocEvent e{};
    e.device = device.index_;
    e.kind = vramtrace_wire_Kind_KIND_BLOCK;
    e.api = vramtrace_wire_Api_API_C10_REPORT_OUT_OF_MEMORY;
    e.size = alloc_size > 0 ? static_cast<uint64_t>(alloc_size) : 0;
    e.requested_size = e.size;
    e.result = 2;  // cudaErrorMemoryAllocation, as a failed cudaMalloc says it
    e.has_allocator_totals = true;
    e.allocator_allocated = total_allocated;
    e.allocator_reserved = total_reserved;
    record_alloc(e);
  }
  if (real != nullptr) real(alloc_size, total_allocated, total_reserved, device);
}
