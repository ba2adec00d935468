// Kernels on a GPU that computes nothing: what nvcc's generated code and PyTorch's libraries
// call to register modules and launch kernels, accepted so that every allocation, copy and
// synchronisation around the kernels happens as on a real GPU, while device memory is never
// computed.
//
// Registration. __cudaRegisterFatBinary hands back a handle per module and keeps nothing of
//   the fat binary (it is never parsed). __cudaRegisterFunction records the host stub of each
//   kernel, so that launches and attribute queries of a function that no module registered fail
//   with cudaErrorInvalidDeviceFunction, as on a GPU. __cudaRegisterVar gives each __device__ or
//   __constant__ variable zeroed host memory of its size, outside the devices' heaps (module
//   variables are not allocations on a GPU either): cudaGetSymbolAddress returns it, and
//   cudaMemcpyToSymbol writes it.
// Launches. __cudaPushCallConfiguration and __cudaPopCallConfiguration pass the <<<...>>>
//   configuration through a per-thread stack; __cudaLaunchKernel, cudaLaunchKernel,
//   cudaLaunchKernelExC and cudaLaunchCooperativeKernel check the function, the block size
//   against the device's limit, and the context, then return cudaSuccess without running it.
// Attributes and occupancy. cudaFuncGetAttributes reports the same attributes for every kernel
//   (no registers, no static shared memory, the device's limits); the occupancy of a block is
//   the device's threads per multiprocessor over the block's, at most its blocks per
//   multiprocessor.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda_kernel_registration.h"
#include "entry_support.h"

namespace {

using simcuda::record;
using simcuda::runtime::Driver;
using simcuda::runtime::in_context;

// The limits launches and attributes report: those of the driver's simulated device.
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxThreadsPerMultiprocessor = 2048;
constexpr int kMaxBlocksPerMultiprocessor = 32;
constexpr int kSharedMemoryPerBlock = 48 * 1024;

// What registration keeps. Written by static constructors of the libraries being loaded, read
// by launches on any thread; never destroyed, since modules unregister from static destructors.
struct Registry {
  std::mutex lock;
  std::unordered_set<const void*> functions;
  std::unordered_map<const void*, std::vector<unsigned char>*> variables;
};

Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

bool registered_function(const void* host_function) {
  Registry& known = registry();
  const std::scoped_lock guard(known.lock);
  return known.functions.count(host_function) != 0;
}

// A variable's host memory, or nullptr when no module registered `symbol`.
std::vector<unsigned char>* variable(const void* symbol) {
  Registry& known = registry();
  const std::scoped_lock guard(known.lock);
  const auto found = known.variables.find(symbol);
  return found == known.variables.end() ? nullptr : found->second;
}

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  std::size_t shared_memory;
  cudaStream_t stream;
};

thread_local std::vector<CallConfiguration> call_configurations;

// One module handle per registration; the value is never read.
void* module_token = nullptr;

cudaError_t launch(const void* function, dim3 block, std::size_t shared_memory) {
  return in_context([&](const Driver&) {
    if (function == nullptr || !registered_function(function)) {
      return cudaErrorInvalidDeviceFunction;
    }
    const unsigned long long threads = 1ULL * block.x * block.y * block.z;
    if (threads == 0 || threads > kMaxThreadsPerBlock) return cudaErrorInvalidConfiguration;
    static_cast<void>(shared_memory);
    return cudaSuccess;
  });
}

}  // namespace

SIMCUDA_EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  static_cast<void>(fatCubin);
  return &module_token;
}

SIMCUDA_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) {
  static_cast<void>(fatCubinHandle);
}

// Functions and variables stay registered: a stub called after its module unloaded is the
// program's bug, and the memory of a variable may still be in use.
SIMCUDA_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  static_cast<void>(fatCubinHandle);
}

SIMCUDA_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun,
                                           char* deviceFun, const char* deviceName,
                                           int thread_limit, uint3* tid, uint3* bid, dim3* bDim,
                                           dim3* gDim, int* wSize) {
  static_cast<void>(fatCubinHandle);
  static_cast<void>(deviceFun);
  static_cast<void>(deviceName);
  static_cast<void>(thread_limit);
  static_cast<void>(tid);
  static_cast<void>(bid);
  static_cast<void>(bDim);
  static_cast<void>(gDim);
  static_cast<void>(wSize);
  Registry& known = registry();
  const std::scoped_lock guard(known.lock);
  known.functions.insert(hostFun);
}

SIMCUDA_EXPORT void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                      const char* deviceName, int ext, size_t size, int constant,
                                      int global) {
  static_cast<void>(fatCubinHandle);
  static_cast<void>(deviceAddress);
  static_cast<void>(deviceName);
  static_cast<void>(ext);
  static_cast<void>(constant);
  static_cast<void>(global);
  Registry& known = registry();
  const std::scoped_lock guard(known.lock);
  auto& slot = known.variables[hostVar];
  if (slot == nullptr) slot = new std::vector<unsigned char>(size == 0 ? 1 : size);
}

SIMCUDA_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                    struct CUstream_st* stream) {
  call_configurations.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

SIMCUDA_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim,
                                                      size_t* sharedMem, void* stream) {
  if (call_configurations.empty()) return record(cudaErrorMissingConfiguration);
  const CallConfiguration configuration = call_configurations.back();
  call_configurations.pop_back();
  *gridDim = configuration.grid;
  *blockDim = configuration.block;
  *sharedMem = configuration.shared_memory;
  *static_cast<cudaStream_t*>(stream) = configuration.stream;
  return cudaSuccess;
}

// A kernel's handle is its host stub.
SIMCUDA_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (kernel == nullptr || !registered_function(hostFun)) {
    return record(cudaErrorInvalidDeviceFunction);
  }
  *kernel = static_cast<cudaKernel_t>(const_cast<void*>(hostFun));
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void** args, size_t sharedMem, cudaStream_t stream) {
  static_cast<void>(gridDim);
  static_cast<void>(args);
  static_cast<void>(stream);
  return launch(kernel, blockDim, sharedMem);
}

SIMCUDA_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                   void** args, size_t sharedMem,
                                                   cudaStream_t stream) {
  static_cast<void>(gridDim);
  static_cast<void>(args);
  static_cast<void>(stream);
  return launch(kernel, blockDim, sharedMem);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim,
                                            void** args, size_t sharedMem, cudaStream_t stream) {
  static_cast<void>(gridDim);
  static_cast<void>(args);
  static_cast<void>(stream);
  return launch(func, blockDim, sharedMem);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim,
                                                       dim3 blockDim, void** args, size_t sharedMem,
                                                       cudaStream_t stream) {
  static_cast<void>(gridDim);
  static_cast<void>(args);
  static_cast<void>(stream);
  return launch(func, blockDim, sharedMem);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                               void** args) {
  static_cast<void>(args);
  if (config == nullptr) return record(cudaErrorInvalidValue);
  return launch(func, config->blockDim, config->dynamicSmemBytes);
}

SIMCUDA_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr,
                                                 const void* func) {
  return in_context([&](const Driver&) {
    if (attr == nullptr) return cudaErrorInvalidValue;
    if (!registered_function(func)) return cudaErrorInvalidDeviceFunction;
    cudaFuncAttributes filled{};
    filled.maxThreadsPerBlock = kMaxThreadsPerBlock;
    filled.ptxVersion = 90;
    filled.binaryVersion = 90;
    filled.maxDynamicSharedSizeBytes = kSharedMemoryPerBlock;
    *attr = filled;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr,
                                                int value) {
  return in_context([&](const Driver&) {
    if (!registered_function(func)) return cudaErrorInvalidDeviceFunction;
    if (static_cast<int>(attr) < cudaFuncAttributeMaxDynamicSharedMemorySize ||
        static_cast<int>(attr) >= cudaFuncAttributeMax || value < 0) {
      return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
                                                           enum cudaFuncAttribute attr, int value,
                                                           int device) {
  return in_context([&](const Driver& driver) {
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    if (!registered_function(kernel)) return cudaErrorInvalidDeviceFunction;
    if (static_cast<int>(attr) < cudaFuncAttributeMaxDynamicSharedMemorySize ||
        static_cast<int>(attr) >= cudaFuncAttributeMax || value < 0) {
      return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, const void* func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  return in_context([&](const Driver&) {
    if (numBlocks == nullptr || blockSize <= 0 || blockSize > kMaxThreadsPerBlock) {
      return cudaErrorInvalidValue;
    }
    if (!registered_function(func)) return cudaErrorInvalidDeviceFunction;
    static_cast<void>(dynamicSMemSize);
    static_cast<void>(flags);
    const int by_threads = kMaxThreadsPerMultiprocessor / blockSize;
    *numBlocks =
        by_threads < kMaxBlocksPerMultiprocessor ? by_threads : kMaxBlocksPerMultiprocessor;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
                                                                         const void* func,
                                                                         int blockSize,
                                                                         size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

SIMCUDA_EXPORT cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  return in_context([&](const Driver&) {
    if (devPtr == nullptr) return cudaErrorInvalidValue;
    std::vector<unsigned char>* memory = variable(symbol);
    if (memory == nullptr) return cudaErrorInvalidSymbol;
    *devPtr = memory->data();
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                              size_t offset, enum cudaMemcpyKind kind) {
  return in_context([&](const Driver&) {
    std::vector<unsigned char>* memory = variable(symbol);
    if (memory == nullptr) return cudaErrorInvalidSymbol;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
        kind != cudaMemcpyDefault) {
      return cudaErrorInvalidMemcpyDirection;
    }
    if (offset > memory->size() || count > memory->size() - offset) return cudaErrorInvalidValue;
    if (count != 0) std::memcpy(memory->data() + offset, src, count);
    return cudaSuccess;
  });
}

// The profiler API controls a profiler's collection; with none attached it does nothing.
SIMCUDA_EXPORT cudaError_t cudaProfilerStart(void) {
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t cudaProfilerStop(void) {
  return cudaSuccess;
}
