// The simulated machine, as described by the SIMCUDA_* environment variables.
#pragma once

#include <cstddef>
#include <string>

namespace simcuda {

struct Config {
  // SIMCUDA_DEVICE_COUNT: number of simulated GPUs.
  int device_count = 2;
  // SIMCUDA_DEVICE_MEMORY: capacity of each GPU's arena, in bytes.
  std::size_t device_memory = std::size_t{16} << 30;
  // SIMCUDA_NO_DEVICE=1: behave like a machine whose driver sees no GPU.
  bool no_device = false;
};

// Upper bound on SIMCUDA_DEVICE_COUNT; each device reserves SIMCUDA_DEVICE_MEMORY of address
// space, so an absurd count would exhaust it.
inline constexpr int kMaxDevices = 64;

struct ConfigResult {
  Config config;
  std::string error;  // empty when every variable was well formed
};

// Reads the environment once; the runtime calls it on first use, as CUDA reads
// CUDA_VISIBLE_DEVICES when it initialises.
ConfigResult read_config_from_environment();

}  // namespace simcuda
