// Driver API: kernel launches and occupancy (loaded_code.h). A launch is checked as the real
// driver checks it and then done at once: the simulated device computes nothing, so the memory
// a kernel writes keeps what it held.

#include "api_support.h"
#include "capture.h"
#include "loaded_code.h"

namespace {

using simcuda::driver::Captures;
using simcuda::driver::current_device_or_none;
using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::initialized;
using simcuda::driver::LaunchShape;
using simcuda::driver::LoadedCode;

CUresult launch(CUfunction function, const LaunchShape& shape, CUstream stream,
                void** kernel_params, void** extra) {
  return in_context([&](Driver& driver, int device) {
    // Arguments come one way or the other, not both.
    if (kernel_params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) {
      return result;
    }
    if (const CUresult result = LoadedCode::get().check_launch(function, device, shape);
        result != CUDA_SUCCESS) {
      return result;
    }
    // Nothing runs, now or at a launch of the graph a capture puts it in.
    return Captures::get()
        .capture(stream, CU_GRAPH_NODE_TYPE_KERNEL, [] { return CUDA_SUCCESS; })
        .value_or(CUDA_SUCCESS);
  });
}

LaunchShape shape_of(unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                     unsigned int by, unsigned int bz, unsigned int shared) {
  return LaunchShape{{gx, gy, gz}, {bx, by, bz}, shared};
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction function, void** kernel_params,
                   void** extra) {
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LaunchShape shape =
      shape_of(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
               config->blockDimY, config->blockDimZ, config->sharedMemBytes);
  for (unsigned int i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config->attrs[i];
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      shape.cluster[0] = attribute.value.clusterDim.x;
      shape.cluster[1] = attribute.value.clusterDim.y;
      shape.cluster[2] = attribute.value.clusterDim.z;
    } else if (attribute.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      shape.cooperative = attribute.value.cooperative != 0;
    } else if (attribute.id >= CU_LAUNCH_ATTRIBUTE_MAX) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return launch(function, shape, config->hStream, kernel_params, extra);
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes,
                                              CUstream hStream, void** kernelParams, void** extra) {
  return launch(
      f, shape_of(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes),
      hStream, kernelParams, extra);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                   unsigned int gridDimY, unsigned int gridDimZ,
                                                   unsigned int blockDimX, unsigned int blockDimY,
                                                   unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream,
                                                   void** kernelParams, void** extra) {
  return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                        sharedMemBytes, hStream, kernelParams, extra);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                                void** kernelParams, void** extra) {
  return launch_ex(config, f, kernelParams, extra);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                                     void** kernelParams, void** extra) {
  return launch_ex(config, f, kernelParams, extra);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  LaunchShape shape =
      shape_of(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes);
  shape.cooperative = true;
  return launch(f, shape, hStream, kernelParams, nullptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  return cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                   sharedMemBytes, hStream, kernelParams);
}

SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
                                                                           CUfunction func,
                                                                           int blockSize,
                                                                           size_t dynamicSMemSize) {
  return initialized([&](Driver& driver) {
    if (numBlocks == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().occupancy(func, current_device_or_none(driver), blockSize,
                                       dynamicSMemSize, numBlocks);
  });
}

// The flags only say whether caching in L1 may be assumed off, which changes nothing here.
SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}

SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize,
                                                                       CUfunction func,
                                                                       int numBlocks,
                                                                       int blockSize) {
  return initialized([&](Driver& driver) {
    if (dynamicSmemSize == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().available_dynamic_shared(func, current_device_or_none(driver),
                                                      numBlocks, blockSize, dynamicSmemSize);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                            const CUlaunchConfig* config) {
  return initialized([&](Driver& driver) {
    if (numClusters == nullptr || config == nullptr ||
        (config->numAttrs > 0 && config->attrs == nullptr)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return LoadedCode::get().max_active_clusters(func, current_device_or_none(driver), *config,
                                                 numClusters);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                                                  const CUlaunchConfig* config) {
  return initialized([&](Driver& driver) {
    if (clusterSize == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().max_cluster_size(func, current_device_or_none(driver), clusterSize);
  });
}
