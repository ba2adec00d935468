// The part of PyTorch's libc10.so ABI that the simulated allocator and its libc10 stand-in
// share (c10/core/Device.h, c10/core/Allocator.h), declared from PyTorch's headers' shapes:
// the functions' mangled names are PyTorch's own, so the shim's hooks take their calls.
#pragma once

#include <cstddef>
#include <cstdint>

namespace c10 {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
using DeviceIndex = int8_t;

struct Device {
  Device(DeviceType type, DeviceIndex index) : type_(type), index_(index) {}
  DeviceType type_;
  DeviceIndex index_;
};

void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
                                 size_t total_reserved, Device device);
void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                                 Device device);

}  // namespace c10
