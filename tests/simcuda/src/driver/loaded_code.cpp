#include "loaded_code.h"

#include <algorithm>
#include <utility>

#include "device_properties.h"
#include "driver.h"

namespace simcuda::driver {
namespace {

int attribute(CUdevice_attribute which, int device) {
  return device_attribute(which, device).value_or(0);
}

// The compute capability as 10 * major + minor, as fat binaries name architectures.
int architecture(int device) {
  return 10 * attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) +
         attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
}

// Registers are allocated per warp in units of 256 (8 per thread), as on sm_80 and sm_90.
int registers_per_warp(int registers_per_thread) {
  return (std::max(registers_per_thread, 1) * 32 + 255) / 256 * 256;
}

// A cluster larger than this needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, and
// none may be larger than the non-portable limit (sm_90).
constexpr int kPortableClusterSize = 8;
constexpr int kNonPortableClusterSize = 16;

}  // namespace

LoadedCode& LoadedCode::get() {
  static LoadedCode* const instance = new LoadedCode;  // never destroyed, as Driver
  return *instance;
}

CUresult LoadedCode::load_library(const void* code, std::vector<char> file_bytes, int device,
                                  bool eager, CUlibrary* out) {
  if (!file_bytes.empty()) code = file_bytes.data();
  ImageResult read = read_device_image(code, architecture(device));
  // Code with no binary for this device loads; the failure comes at first use, as with lazy
  // loading on a real device ("no kernel image is available").
  if (!read.image && read.error != ImageError::NoBinaryForDevice) return CUDA_ERROR_INVALID_IMAGE;
  auto library = std::make_unique<CUlib_st>();
  if (read.image) library->image = std::make_shared<const DeviceImage>(std::move(*read.image));
  library->file_bytes = std::move(file_bytes);
  std::lock_guard lock(mutex_);
  CUlibrary handle = library.get();
  libraries_.emplace(handle, std::move(library));
  if (eager && handle->image) {
    CUmodule module = nullptr;
    if (const CUresult result = load_module_locked(handle, handle->image, device, &module);
        result != CUDA_SUCCESS) {
      libraries_.erase(handle);
      return result;
    }
  }
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::unload_library(CUlibrary library) {
  std::lock_guard lock(mutex_);
  const auto found = libraries_.find(library);
  if (found == libraries_.end()) return CUDA_ERROR_INVALID_HANDLE;
  for (const auto& [device, module] : library->modules) unload_module_locked(module);
  for (auto kernel = kernels_by_name_.begin(); kernel != kernels_by_name_.end();) {
    if (kernel->first.first != library) {
      ++kernel;
      continue;
    }
    kernels_.erase(kernel->second);
    kernel = kernels_by_name_.erase(kernel);
  }
  libraries_.erase(found);
  return CUDA_SUCCESS;
}

CUresult LoadedCode::load_module(const void* code, int device, CUmodule* out) {
  ImageResult read = read_device_image(code, architecture(device));
  if (!read.image) {
    return read.error == ImageError::NoBinaryForDevice ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                                       : CUDA_ERROR_INVALID_IMAGE;
  }
  std::lock_guard lock(mutex_);
  return load_module_locked(nullptr, std::make_shared<const DeviceImage>(std::move(*read.image)),
                            device, out);
}

CUresult LoadedCode::unload_module(CUmodule module) {
  std::lock_guard lock(mutex_);
  const auto found = modules_.find(module);
  // A library's module goes with its library.
  if (found == modules_.end() || module->library != nullptr) return CUDA_ERROR_INVALID_HANDLE;
  unload_module_locked(module);
  return CUDA_SUCCESS;
}

CUresult LoadedCode::library_module(CUlibrary library, int device, CUmodule* out) {
  std::lock_guard lock(mutex_);
  if (libraries_.count(library) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!library->image) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (const auto loaded = library->modules.find(device); loaded != library->modules.end()) {
    *out = loaded->second;
    return CUDA_SUCCESS;
  }
  return load_module_locked(library, library->image, device, out);
}

CUresult LoadedCode::library_kernel(CUlibrary library, const char* name, CUkernel* out) {
  std::lock_guard lock(mutex_);
  if (libraries_.count(library) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!library->image) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (library->image->kernels.count(name) == 0) return CUDA_ERROR_NOT_FOUND;
  auto key = std::make_pair(library, std::string(name));
  if (const auto found = kernels_by_name_.find(key); found != kernels_by_name_.end()) {
    *out = found->second;
    return CUDA_SUCCESS;
  }
  auto kernel = std::make_unique<CUkern_st>(CUkern_st{library, name});
  *out = kernel.get();
  kernels_by_name_.emplace(std::move(key), kernel.get());
  kernels_.emplace(kernel.get(), std::move(kernel));
  return CUDA_SUCCESS;
}

CUresult LoadedCode::kernel_library(CUkernel kernel, CUlibrary* out) {
  std::lock_guard lock(mutex_);
  if (kernels_.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *out = kernel->library;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::kernel_name(CUkernel kernel, const char** out) {
  std::lock_guard lock(mutex_);
  if (kernels_.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *out = kernel->name.c_str();
  return CUDA_SUCCESS;
}

CUresult LoadedCode::kernel_function(CUkernel kernel, int device, CUfunction* out) {
  std::lock_guard lock(mutex_);
  return kernel_function_locked(kernel, device, out);
}

CUresult LoadedCode::kernel_function_locked(CUkernel kernel, int device, CUfunction* out) {
  if (kernels_.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  CUlibrary library = kernel->library;
  CUmodule module = nullptr;
  if (const auto loaded = library->modules.find(device); loaded != library->modules.end()) {
    module = loaded->second;
  } else if (const CUresult result = load_module_locked(library, library->image, device, &module);
             result != CUDA_SUCCESS) {
    return result;
  }
  return function_locked(module, kernel->name, out);
}

CUresult LoadedCode::module_function(CUmodule module, const char* name, CUfunction* out) {
  std::lock_guard lock(mutex_);
  if (modules_.count(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  return function_locked(module, name, out);
}

CUresult LoadedCode::module_global(CUmodule module, const char* name, CUdeviceptr* address,
                                   std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  if (modules_.count(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  const auto global = module->image->globals.find(name);
  if (global == module->image->globals.end()) return CUDA_ERROR_NOT_FOUND;
  if (address != nullptr) *address = module->memory + global->second.offset;
  if (bytes != nullptr) *bytes = global->second.size;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::function_name(CUfunction function, int device, const char** out) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = resolved->name.c_str();
  return CUDA_SUCCESS;
}

CUresult LoadedCode::function_module(CUfunction function, int device, CUmodule* out) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = resolved->module;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::function_attribute(CUfunction function, int device, CUfunction_attribute which,
                                        int* out) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const KernelImage& kernel = *resolved->kernel;
  switch (which) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *out = max_threads_locked(*resolved);
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *out = static_cast<int>(kernel.static_shared);
      break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *out = static_cast<int>(kernel.constant_bytes);
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *out = 0;
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *out = kernel.registers;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *out = resolved->module->image->architecture != 0 ? resolved->module->image->architecture
                                                        : architecture(resolved->module->device);
      break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *out = 0;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *out = resolved->max_dynamic_shared;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *out = resolved->shared_carveout;
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
      *out = 0;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      *out = resolved->required_cluster[0];
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      *out = resolved->required_cluster[1];
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *out = resolved->required_cluster[2];
      break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *out = resolved->non_portable_clusters ? 1 : 0;
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *out = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult LoadedCode::set_function_attribute(CUfunction function, int device,
                                            CUfunction_attribute which, int value) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (which) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      // Static and dynamic shared memory together within the device's opt-in maximum.
      const int limit = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                  resolved->module->device) -
                        static_cast<int>(resolved->kernel->static_shared);
      if (value < 0 || value > limit) return CUDA_ERROR_INVALID_VALUE;
      resolved->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      resolved->shared_carveout = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      resolved->non_portable_clusters = value != 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      if (value < 0) return CUDA_ERROR_INVALID_VALUE;
      resolved->required_cluster[which - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // the others are read-only
  }
}

CUresult LoadedCode::check_launch(CUfunction function, int device, const LaunchShape& shape) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // A function belongs to the context its module was loaded into.
  if (resolved->module->device != device) return CUDA_ERROR_INVALID_HANDLE;
  const CUdevice_attribute grid_limits[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                             CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                             CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  const CUdevice_attribute block_limits[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                              CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                              CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  unsigned long long threads = 1;
  unsigned long long blocks = 1;
  int cluster_size = 1;
  for (int axis = 0; axis < 3; ++axis) {
    const auto grid_limit = static_cast<unsigned int>(attribute(grid_limits[axis], device));
    const auto block_limit = static_cast<unsigned int>(attribute(block_limits[axis], device));
    if (shape.grid[axis] == 0 || shape.grid[axis] > grid_limit) return CUDA_ERROR_INVALID_VALUE;
    if (shape.block[axis] == 0 || shape.block[axis] > block_limit) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // A grid is made of whole clusters.
    if (shape.cluster[axis] == 0 || shape.grid[axis] % shape.cluster[axis] != 0) {
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    threads *= shape.block[axis];
    blocks *= shape.grid[axis];
    cluster_size *= static_cast<int>(shape.cluster[axis]);
  }
  if (threads > static_cast<unsigned long long>(max_threads_locked(*resolved))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (static_cast<int>(shape.dynamic_shared) > resolved->max_dynamic_shared) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (cluster_size > max_cluster_locked(*resolved)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (shape.cooperative) {
    // Every block of a cooperative grid must be resident at once.
    const int per_sm = occupancy_locked(*resolved, static_cast<int>(threads), shape.dynamic_shared);
    const auto resident = static_cast<unsigned long long>(per_sm) *
                          attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    if (blocks > resident) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  return CUDA_SUCCESS;
}

CUresult LoadedCode::occupancy(CUfunction function, int device, int block_size,
                               std::size_t dynamic_shared, int* blocks) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  *blocks = occupancy_locked(*resolved, block_size, dynamic_shared);
  return CUDA_SUCCESS;
}

CUresult LoadedCode::available_dynamic_shared(CUfunction function, int device, int blocks,
                                              int block_size, std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks <= 0 || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  const int home = resolved->module->device;
  const auto per_sm = static_cast<std::size_t>(
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, home));
  const auto reserved = static_cast<std::size_t>(
      attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, home));
  const std::size_t per_block = per_sm / static_cast<std::size_t>(blocks);
  const std::size_t taken = reserved + resolved->kernel->static_shared;
  const auto optin = static_cast<std::size_t>(
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, home));
  *bytes = per_block > taken ? std::min(per_block - taken, optin) : 0;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::max_active_clusters(CUfunction function, int device,
                                         const CUlaunchConfig& config, int* clusters) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int cluster_size = 1;
  for (unsigned int i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& attr = config.attrs[i];
    if (attr.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      cluster_size = static_cast<int>(attr.value.clusterDim.x * attr.value.clusterDim.y *
                                      attr.value.clusterDim.z);
    }
  }
  if (cluster_size <= 0 || cluster_size > max_cluster_locked(*resolved)) {
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  const int threads = static_cast<int>(config.blockDimX * config.blockDimY * config.blockDimZ);
  const int per_sm = occupancy_locked(*resolved, std::max(threads, 1), config.sharedMemBytes);
  // A cluster's blocks run on the multiprocessors of one processing cluster (GPC); the
  // simulated device is taken as one pool of multiprocessors.
  const int sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, resolved->module->device);
  *clusters = per_sm == 0 ? 0 : sms * per_sm / cluster_size;
  return CUDA_SUCCESS;
}

CUresult LoadedCode::max_cluster_size(CUfunction function, int device, int* size) {
  std::lock_guard lock(mutex_);
  CUfunc_st* const resolved = resolve_locked(function, device);
  if (resolved == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *size = max_cluster_locked(*resolved);
  return CUDA_SUCCESS;
}

CUresult LoadedCode::load_module_locked(CUlibrary library, std::shared_ptr<const DeviceImage> image,
                                        int device, CUmodule* out) {
  auto module = std::make_unique<CUmod_st>(CUmod_st{library, device, std::move(image)});
  if (module->image->device_bytes > 0) {
    const CUresult result = Driver::get().allocate(device, module->image->device_bytes,
                                                   AllocationKind::Module, &module->memory);
    if (result != CUDA_SUCCESS) return result;
  }
  CUmodule handle = module.get();
  modules_.emplace(handle, std::move(module));
  if (library != nullptr) library->modules.emplace(device, handle);
  *out = handle;
  return CUDA_SUCCESS;
}

void LoadedCode::unload_module_locked(CUmodule module) {
  for (const auto& [name, function] : module->functions) functions_.erase(function);
  if (module->memory != 0) Driver::get().free_module_memory(module->memory);
  modules_.erase(module);
}

CUresult LoadedCode::function_locked(CUmodule module, const std::string& name, CUfunction* out) {
  if (const auto found = module->functions.find(name); found != module->functions.end()) {
    *out = found->second;
    return CUDA_SUCCESS;
  }
  const auto kernel = module->image->kernels.find(name);
  if (kernel == module->image->kernels.end()) return CUDA_ERROR_NOT_FOUND;
  auto function = std::make_unique<CUfunc_st>(CUfunc_st{module, name, &kernel->second});
  *out = function.get();
  module->functions.emplace(name, function.get());
  functions_.emplace(function.get(), std::move(function));
  return CUDA_SUCCESS;
}

CUfunc_st* LoadedCode::resolve_locked(CUfunction function, int device) {
  if (const auto found = functions_.find(function); found != functions_.end()) {
    return found->second.get();
  }
  // A kernel in place of a function: its function in the device's context.
  const auto kernel = reinterpret_cast<CUkernel>(function);
  if (device < 0 || kernels_.count(kernel) == 0) return nullptr;
  CUfunction resolved = nullptr;
  if (kernel_function_locked(kernel, device, &resolved) != CUDA_SUCCESS) return nullptr;
  return resolved;
}

int LoadedCode::max_threads_locked(const CUfunc_st& function) const {
  const int device = function.module->device;
  int limit = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  if (function.kernel->max_threads_per_block > 0) {
    limit = std::min(limit, function.kernel->max_threads_per_block);
  }
  // The registers of a block's warps must fit in the multiprocessor's register file.
  const int warps_by_registers = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, device) /
                                 registers_per_warp(function.kernel->registers);
  return std::min(limit, warps_by_registers * 32);
}

int LoadedCode::occupancy_locked(const CUfunc_st& function, int block_size,
                                 std::size_t dynamic_shared) const {
  const int device = function.module->device;
  if (block_size > max_threads_locked(function)) return 0;
  const int warps = (block_size + 31) / 32;
  int blocks = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, device);
  blocks = std::min(
      blocks, attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device) / (warps * 32));
  blocks =
      std::min(blocks, attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device) /
                           (warps * registers_per_warp(function.kernel->registers)));
  const std::size_t shared = function.kernel->static_shared + dynamic_shared;
  if (shared > 0) {
    const auto reserved = static_cast<std::size_t>(
        attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, device));
    const auto per_sm = static_cast<std::size_t>(
        attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, device));
    blocks = std::min(blocks, static_cast<int>(per_sm / (shared + reserved)));
  }
  return std::max(blocks, 0);
}

int LoadedCode::max_cluster_locked(const CUfunc_st& function) const {
  // Clusters exist from compute capability 9.0 on.
  if (architecture(function.module->device) < 90) return 1;
  return function.non_portable_clusters ? kNonPortableClusterSize : kPortableClusterSize;
}

}  // namespace simcuda::driver
