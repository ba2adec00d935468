// Driver API: modules, libraries, kernels and functions (loaded_code.h).

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "api_support.h"
#include "loaded_code.h"

namespace {

using simcuda::driver::current_device_or_none;
using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::initialized;
using simcuda::driver::LoadedCode;

// CUDA_MODULE_LOADING, read as the real driver reads it: EAGER, else lazy.
bool eager_loading() {
  const char* mode = std::getenv("CUDA_MODULE_LOADING");
  return mode != nullptr && std::strcmp(mode, "EAGER") == 0;
}

// A file's bytes, with a terminating zero so that PTX reads as a string; empty when unreadable.
std::vector<char> read_file(const char* path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return {};
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!bytes.empty()) bytes.push_back('\0');
  return bytes;
}

CUresult load_module(CUmodule* module, const void* image) {
  return in_context([&](Driver&, int device) {
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().load_module(image, device, module);
  });
}

// JIT and library options change nothing here (no code is compiled), but a count needs its
// array. Values may be missing: cuBLAS passes CU_LIBRARY_BINARY_IS_PRESERVED without one.
bool valid_options(unsigned int count, const void* options, const void*) {
  return count == 0 || options != nullptr;
}

CUresult load_library(CUlibrary* library, const void* code, std::vector<char> file_bytes,
                      unsigned int jit_count, const void* jit_options, const void* jit_values,
                      unsigned int library_count, const void* library_options,
                      const void* library_values) {
  return initialized([&](Driver& driver) {
    if (library == nullptr || (code == nullptr && file_bytes.empty()) ||
        !valid_options(jit_count, jit_options, jit_values) ||
        !valid_options(library_count, library_options, library_values)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // A library belongs to no context; eager loading loads it into the current one, if any.
    int device = 0;
    const bool in_a_context = driver.context_device(nullptr, &device) == CUDA_SUCCESS;
    return LoadedCode::get().load_library(code, std::move(file_bytes), device,
                                          eager_loading() && in_a_context, library);
  });
}

CUresult global_of(CUmodule module, const char* name, CUdeviceptr* dptr, size_t* bytes) {
  if (name == nullptr || (dptr == nullptr && bytes == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return LoadedCode::get().module_global(module, name, dptr, bytes);
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (fname == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<char> bytes = read_file(fname);
  if (bytes.empty()) return CUDA_ERROR_FILE_NOT_FOUND;
  return load_module(module, bytes.data());
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return load_module(module, image);
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                  unsigned int numOptions, CUjit_option* options,
                                                  void** optionValues) {
  if (!valid_options(numOptions, options, optionValues)) return CUDA_ERROR_INVALID_VALUE;
  return load_module(module, image);
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return load_module(module, fatCubin);
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  return initialized([&](Driver&) { return LoadedCode::get().unload_module(hmod); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  return initialized([&](Driver&) {
    if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *mode = eager_loading() ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                                   const char* name) {
  return initialized([&](Driver&) {
    if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().module_function(hmod, name, hfunc);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                                    const char* name) {
  return initialized([&](Driver&) { return global_of(hmod, name, dptr, bytes); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr_v1* dptr, unsigned int* bytes,
                                                 CUmodule hmod, const char* name) {
  return initialized([&](Driver&) {
    CUdeviceptr address = 0;
    size_t size = 0;
    const CUresult result = global_of(hmod, name, dptr != nullptr ? &address : nullptr,
                                      bytes != nullptr ? &size : nullptr);
    if (result != CUDA_SUCCESS) return result;
    if (dptr != nullptr) *dptr = static_cast<CUdeviceptr_v1>(address);
    if (bytes != nullptr) *bytes = static_cast<unsigned int>(size);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code,
                                                 CUjit_option* jitOptions, void** jitOptionsValues,
                                                 unsigned int numJitOptions,
                                                 CUlibraryOption* libraryOptions,
                                                 void** libraryOptionValues,
                                                 unsigned int numLibraryOptions) {
  return load_library(library, code, {}, numJitOptions, jitOptions, jitOptionsValues,
                      numLibraryOptions, libraryOptions, libraryOptionValues);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryLoadFromFile(
    CUlibrary* library, const char* fileName, CUjit_option* jitOptions, void** jitOptionsValues,
    unsigned int numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
    unsigned int numLibraryOptions) {
  if (fileName == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<char> bytes = read_file(fileName);
  if (bytes.empty()) return CUDA_ERROR_FILE_NOT_FOUND;
  return load_library(library, nullptr, std::move(bytes), numJitOptions, jitOptions,
                      jitOptionsValues, numLibraryOptions, libraryOptions, libraryOptionValues);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  return initialized([&](Driver&) { return LoadedCode::get().unload_library(library); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library,
                                                  const char* name) {
  return initialized([&](Driver&) {
    if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().library_kernel(library, name, pKernel);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  return in_context([&](Driver&, int device) {
    if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().library_module(library, device, pMod);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes,
                                                  CUlibrary library, const char* name) {
  return in_context([&](Driver&, int device) {
    CUmodule module = nullptr;
    if (const CUresult result = LoadedCode::get().library_module(library, device, &module);
        result != CUDA_SUCCESS) {
      return result;
    }
    return global_of(module, name, dptr, bytes);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  return in_context([&](Driver&, int device) {
    if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().kernel_function(kernel, device, pFunc);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  return initialized([&](Driver&) {
    if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().kernel_library(kernel, pLib);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return initialized([&](Driver&) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().kernel_name(hfunc, name);
  });
}

// A kernel's attributes are those of its function on the given device.
SIMCUDA_DRIVER_EXPORT CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib,
                                                    CUkernel kernel, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    CUfunction function = nullptr;
    if (const CUresult result = LoadedCode::get().kernel_function(kernel, dev, &function);
        result != CUDA_SUCCESS) {
      return result;
    }
    return LoadedCode::get().function_attribute(function, dev, attrib, pi);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                                    CUkernel kernel, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    CUfunction function = nullptr;
    if (const CUresult result = LoadedCode::get().kernel_function(kernel, dev, &function);
        result != CUDA_SUCCESS) {
      return result;
    }
    return LoadedCode::get().set_function_attribute(function, dev, attrib, val);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib,
                                                  CUfunction hfunc) {
  return initialized([&](Driver& driver) {
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().function_attribute(hfunc, current_device_or_none(driver), attrib, pi);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                                  int value) {
  return initialized([&](Driver& driver) {
    return LoadedCode::get().set_function_attribute(hfunc, current_device_or_none(driver), attrib,
                                                    value);
  });
}

// The preference is a hint the simulated device has no use for; the function must exist.
SIMCUDA_DRIVER_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  return initialized([&](Driver& driver) {
    if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const char* name = nullptr;
    return LoadedCode::get().function_name(hfunc, current_device_or_none(driver), &name);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return initialized([&](Driver& driver) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().function_name(hfunc, current_device_or_none(driver), name);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  return initialized([&](Driver& driver) {
    if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadedCode::get().function_module(hfunc, current_device_or_none(driver), hmod);
  });
}
