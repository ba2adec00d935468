// Driver API: copies and memset. Synchronous, as everything in the simulation; the _ptds
// variants (per-thread default stream) behave as the plain ones. The legacy entry points take
// 32-bit device addresses, which never name simulated device memory (see api_memory.cpp).

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::Side;

namespace {

std::uintptr_t host_address(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

CUresult copy(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side,
              std::size_t count) {
  return in_context(
      [&](Driver& driver, int) { return driver.copy(dst, dst_side, src, src_side, count); });
}

CUresult host_to_device(CUdeviceptr dst, const void* src, std::size_t count) {
  return copy(dst, Side::Device, host_address(src), Side::Any, count);
}

CUresult device_to_host(void* dst, CUdeviceptr src, std::size_t count) {
  return copy(host_address(dst), Side::Any, src, Side::Device, count);
}

CUresult device_to_device(CUdeviceptr dst, CUdeviceptr src, std::size_t count) {
  return copy(dst, Side::Device, src, Side::Device, count);
}

CUresult fill(CUdeviceptr dst, unsigned char value, std::size_t count) {
  return in_context([&](Driver& driver, int) { return driver.fill(dst, value, count); });
}

}  // namespace

// Unified addressing: either side may be host or device memory.
SIMCUDA_DRIVER_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(dst, Side::Any, src, Side::Any, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(dst, Side::Any, src, Side::Any, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost,
                                               size_t ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost,
                                                    size_t ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost,
                                            unsigned int ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice,
                                               size_t ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice,
                                                    size_t ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice,
                                            unsigned int ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                               size_t ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                    size_t ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                                            unsigned int ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fill(dstDevice, uc, N);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc,
                                                  size_t N) {
  return fill(dstDevice, uc, N);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc,
                                          unsigned int N) {
  return fill(dstDevice, uc, N);
}
