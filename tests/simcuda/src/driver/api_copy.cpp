// Driver API: copies and memsets. Synchronous, as everything in the simulation: the *Async
// ones check their stream, then copy or fill before returning (or, in a capturing stream, at
// each launch of the graph: capture.h), with the pointer checks of the synchronous ones. The _ptds
// and _ptsz variants (per-thread default stream) behave as the plain ones. The legacy entry points
// take 32-bit device addresses, which never name simulated device memory (see api_memory.cpp).
// cuMemcpyPeerAsync checks both contexts; peer access need not be enabled for it, as for the real
// one.

#include <functional>

#include "api_support.h"
#include "capture.h"

using simcuda::driver::Captures;
using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::Side;

namespace {

std::uintptr_t host_address(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

// The synchronous copies and memsets wait for the device: unsafe during a capture (capture.h).
CUresult copy(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side,
              std::size_t count) {
  return in_context([&](Driver& driver, int) {
    if (const CUresult result = Captures::get().check_unsafe_call(); result != CUDA_SUCCESS) {
      return result;
    }
    return driver.copy(dst, dst_side, src, src_side, count);
  });
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
  return in_context([&](Driver& driver, int) {
    if (const CUresult result = Captures::get().check_unsafe_call(); result != CUDA_SUCCESS) {
      return result;
    }
    return driver.fill(dst, value, count);
  });
}

CUresult fill32(CUdeviceptr dst, unsigned int value, std::size_t count) {
  return in_context([&](Driver& driver, int) {
    if (const CUresult result = Captures::get().check_unsafe_call(); result != CUDA_SUCCESS) {
      return result;
    }
    return driver.fill32(dst, value, count);
  });
}

// Does `work` on the checked stream, or, while the stream captures, keeps it as a node of the
// graph, done at each launch: `work` holds its arguments by value.
CUresult on_stream(CUstream stream, CUgraphNodeType type, std::function<CUresult()> work) {
  return in_context([&](Driver& driver, int) {
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) return result;
    if (const auto captured = Captures::get().capture(stream, type, work)) return *captured;
    return work();
  });
}

CUresult copy_async(std::uintptr_t dst, Side dst_side, std::uintptr_t src, Side src_side,
                    std::size_t count, CUstream stream) {
  return on_stream(stream, CU_GRAPH_NODE_TYPE_MEMCPY,
                   [=] { return Driver::get().copy(dst, dst_side, src, src_side, count); });
}

CUresult copy_peer_async(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src,
                         CUcontext src_context, std::size_t count, CUstream stream) {
  return in_context([&](Driver& driver, int) {
    int device = 0;
    for (const CUcontext context : {dst_context, src_context}) {
      // Named contexts: a null one is none, not the current one.
      if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
      if (const CUresult result = driver.context_device(context, &device); result != CUDA_SUCCESS) {
        return result;
      }
    }
    return copy_async(dst, Side::Device, src, Side::Device, count, stream);
  });
}

CUresult fill_async(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream stream) {
  return on_stream(stream, CU_GRAPH_NODE_TYPE_MEMSET,
                   [=] { return Driver::get().fill(dst, value, count); });
}

CUresult fill32_async(CUdeviceptr dst, unsigned int value, std::size_t count, CUstream stream) {
  return on_stream(stream, CU_GRAPH_NODE_TYPE_MEMSET,
                   [=] { return Driver::get().fill32(dst, value, count); });
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

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return fill32(dstDevice, ui, N);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui,
                                                   size_t N) {
  return fill32(dstDevice, ui, N);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                             CUstream hStream) {
  return copy_async(dst, Side::Any, src, Side::Any, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src,
                                                  size_t ByteCount, CUstream hStream) {
  return copy_async(dst, Side::Any, src, Side::Any, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost,
                                                    size_t ByteCount, CUstream hStream) {
  return copy_async(dstDevice, Side::Device, host_address(srcHost), Side::Any, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost,
                                                         size_t ByteCount, CUstream hStream) {
  return copy_async(dstDevice, Side::Device, host_address(srcHost), Side::Any, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice,
                                                    size_t ByteCount, CUstream hStream) {
  return copy_async(host_address(dstHost), Side::Any, srcDevice, Side::Device, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice,
                                                         size_t ByteCount, CUstream hStream) {
  return copy_async(host_address(dstHost), Side::Any, srcDevice, Side::Device, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                    size_t ByteCount, CUstream hStream) {
  return copy_async(dstDevice, Side::Device, srcDevice, Side::Device, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
                                                         CUdeviceptr srcDevice, size_t ByteCount,
                                                         CUstream hStream) {
  return copy_async(dstDevice, Side::Device, srcDevice, Side::Device, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                                 CUdeviceptr srcDevice, CUcontext srcContext,
                                                 size_t ByteCount, CUstream hStream) {
  return copy_peer_async(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                                      CUdeviceptr srcDevice, CUcontext srcContext,
                                                      size_t ByteCount, CUstream hStream) {
  return copy_peer_async(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                               CUstream hStream) {
  return fill_async(dstDevice, uc, N, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc,
                                                    size_t N, CUstream hStream) {
  return fill_async(dstDevice, uc, N, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                                CUstream hStream) {
  return fill32_async(dstDevice, ui, N, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui,
                                                     size_t N, CUstream hStream) {
  return fill32_async(dstDevice, ui, N, hStream);
}
