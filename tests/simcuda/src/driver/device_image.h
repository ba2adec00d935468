// What the simulated driver reads from device code handed to it (cuModuleLoadData,
// cuLibraryLoadData, the runtime's fat binaries): the kernels and globals it defines and the
// bytes it would take on the device. Nothing is compiled or run; the image is read only to
// answer as a real driver would (a kernel name that is not there is CUDA_ERROR_NOT_FOUND, a
// global has its size) and to charge a loaded module to the device.
//
// Accepted: a fat binary wrapper (what nvcc registers, magic 0x466243b1), a fat binary
// (0xba55ed50) whose entries may be zstd-compressed, a cubin (ELF) and PTX text. From a fat
// binary the driver takes, as a real one does, the cubin built for the device's architecture
// (same major version, minor not above the device's, the closest), else the PTX, which a real
// driver would compile.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace simcuda::driver {

// What the image says of one kernel; what it does not say has the value nvcc gives a small
// kernel.
struct KernelImage {
  std::size_t code_bytes = 0;
  int registers = 32;              // per thread (.nv.info EIATTR_REGCOUNT)
  std::size_t static_shared = 0;   // .nv.shared.<kernel>
  std::size_t constant_bytes = 0;  // .nv.constant0.<kernel>: parameters and constants
  int max_threads_per_block = 0;   // .nv.info EIATTR_MAX_THREADS (__launch_bounds__); 0: none
};

// A global (or constant) variable at its offset in the module's memory.
struct GlobalImage {
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct DeviceImage {
  std::map<std::string, KernelImage> kernels;
  std::map<std::string, GlobalImage> globals;
  // What loading the image takes of device memory: code, constant banks and globals, each
  // global inside it at its offset.
  std::size_t device_bytes = 0;
  int architecture = 0;  // sm_XY as XY of the chosen cubin; 0 for PTX
};

enum class ImageError { Invalid, NoBinaryForDevice };

struct ImageResult {
  std::optional<DeviceImage> image;
  ImageError error = ImageError::Invalid;
};

// `code` is read in place; `architecture` is the device's compute capability as 10 * major +
// minor.
ImageResult read_device_image(const void* code, int architecture);

}  // namespace simcuda::driver
