// Device code loaded into the simulated driver: libraries (cuLibraryLoadData), modules
// (cuModuleLoad*, and a library's module in each context that uses it), kernels (a library's,
// the same in every context) and functions (a kernel in one module). The code itself is only
// read (device_image.h): to know which kernels and globals exist, their attributes, and how
// much device memory loading a module takes, which is charged to the device as real device
// memory (AllocationKind::Module) and given back when the module is unloaded.
//
// Loading follows the real driver's lazy loading (CUDA_MODULE_LOADING=LAZY, its default): a
// library takes no device memory until a context first uses it (a kernel's function, a global,
// its module); with CUDA_MODULE_LOADING=EAGER its module is loaded into the current context at
// once. cuModuleLoad* loads at once either way.
//
// Every handle is checked against the tables before use: a stale or made-up handle is
// CUDA_ERROR_INVALID_HANDLE, never a crash. Where a CUfunction is taken, a CUkernel may be
// passed instead (as the real driver allows since CUDA 12.0): it stands for its function in the
// given device's context, loaded if need be. `device` is the current context's device, or -1
// when the calling thread has no context.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda.h"
#include "device_image.h"

// The structs behind the handles; only LoadedCode reads them.
struct CUlib_st {
  std::shared_ptr<const simcuda::driver::DeviceImage> image;  // null: no code for this device
  std::vector<char> file_bytes;                               // cuLibraryLoadFromFile's copy
  std::map<int, CUmodule> modules;                            // by device, once loaded
};

struct CUmod_st {
  CUlibrary library;  // null for cuModuleLoad*
  int device;
  std::shared_ptr<const simcuda::driver::DeviceImage> image;
  CUdeviceptr memory = 0;  // code, constants and globals
  std::map<std::string, CUfunction, std::less<>> functions;
};

struct CUkern_st {
  CUlibrary library;
  std::string name;
};

struct CUfunc_st {
  CUmodule module;
  std::string name;
  const simcuda::driver::KernelImage* kernel;  // in module->image
  int max_dynamic_shared = 48 * 1024;          // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int shared_carveout = -1;                    // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  bool non_portable_clusters = false;   // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
  int required_cluster[3] = {0, 0, 0};  // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_*
};

namespace simcuda::driver {

class Driver;

// The shape of a launch, as cuLaunchKernel and cuLaunchKernelEx give it.
struct LaunchShape {
  unsigned int grid[3];
  unsigned int block[3];
  unsigned int dynamic_shared;
  unsigned int cluster[3] = {1, 1, 1};
  bool cooperative = false;
};

class LoadedCode {
 public:
  static LoadedCode& get();

  // `device` is the current context's; `eager` loads a library's module into it at once.
  CUresult load_library(const void* code, std::vector<char> file_bytes, int device, bool eager,
                        CUlibrary* out);
  CUresult unload_library(CUlibrary library);
  CUresult load_module(const void* code, int device, CUmodule* out);
  CUresult unload_module(CUmodule module);

  // A library's module in the device's context, loaded on first use.
  CUresult library_module(CUlibrary library, int device, CUmodule* out);
  CUresult library_kernel(CUlibrary library, const char* name, CUkernel* out);
  CUresult kernel_library(CUkernel kernel, CUlibrary* out);
  CUresult kernel_name(CUkernel kernel, const char** out);
  CUresult kernel_function(CUkernel kernel, int device, CUfunction* out);
  CUresult module_function(CUmodule module, const char* name, CUfunction* out);
  CUresult module_global(CUmodule module, const char* name, CUdeviceptr* address,
                         std::size_t* bytes);
  CUresult function_name(CUfunction function, int device, const char** out);
  CUresult function_module(CUfunction function, int device, CUmodule* out);
  CUresult function_attribute(CUfunction function, int device, CUfunction_attribute attribute,
                              int* out);
  CUresult set_function_attribute(CUfunction function, int device, CUfunction_attribute attribute,
                                  int value);

  // The checks a driver makes before it launches: a known function of a module loaded in the
  // current context's device, a grid and blocks within the device's limits and the function's,
  // shared memory the function may have, a cluster shape the device allows.
  CUresult check_launch(CUfunction function, int device, const LaunchShape& shape);

  // Blocks of `function` that fit on one multiprocessor at once.
  CUresult occupancy(CUfunction function, int device, int block_size, std::size_t dynamic_shared,
                     int* blocks);
  CUresult available_dynamic_shared(CUfunction function, int device, int blocks, int block_size,
                                    std::size_t* bytes);
  CUresult max_active_clusters(CUfunction function, int device, const CUlaunchConfig& config,
                               int* clusters);
  CUresult max_cluster_size(CUfunction function, int device, int* size);

 private:
  CUresult load_module_locked(CUlibrary library, std::shared_ptr<const DeviceImage> image,
                              int device, CUmodule* out);
  void unload_module_locked(CUmodule module);
  CUresult function_locked(CUmodule module, const std::string& name, CUfunction* out);
  CUresult kernel_function_locked(CUkernel kernel, int device, CUfunction* out);
  // The function `function` names (a function, or a kernel in `device`'s context), or nullptr.
  CUfunc_st* resolve_locked(CUfunction function, int device);
  int max_threads_locked(const CUfunc_st& function) const;
  int occupancy_locked(const CUfunc_st& function, int block_size, std::size_t dynamic_shared) const;
  int max_cluster_locked(const CUfunc_st& function) const;

  std::mutex mutex_;
  std::unordered_map<CUlibrary, std::unique_ptr<CUlib_st>> libraries_;
  std::unordered_map<CUmodule, std::unique_ptr<CUmod_st>> modules_;
  std::unordered_map<CUkernel, std::unique_ptr<CUkern_st>> kernels_;
  std::map<std::pair<CUlibrary, std::string>, CUkernel, std::less<>> kernels_by_name_;
  std::unordered_map<CUfunction, std::unique_ptr<CUfunc_st>> functions_;
};

}  // namespace simcuda::driver
