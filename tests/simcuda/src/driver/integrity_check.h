// The integrity check of the driver's private tables: NVIDIA's runtime (the copy statically
// linked into cuBLAS, cuDNN and the rest) asks the driver for a 16-byte value and computes the
// same value itself; if they differ it refuses to start. The value is an HMAC (RFC 2104) over
// MD2 (RFC 1319) of the caller's version, the time it passes, the process and thread, the
// addresses of the tables and of the check function, and each device's UUID and PCI location.
// The layout of those inputs and the key are facts documented by ZLUDA (vosen/ZLUDA,
// dark_api), checked here against cuBLAS 13: its runtime accepts the value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda.h"

namespace simcuda::driver {

// MD2 (RFC 1319), the digest of its own test vectors included.
class Md2 {
 public:
  void update(const void* data, std::size_t size);
  std::array<std::uint8_t, 16> finish();

 private:
  void compress();

  std::uint8_t state_[48] = {};
  std::uint8_t checksum_[16] = {};
  std::uint8_t block_[16] = {};
  std::size_t filled_ = 0;
};

// What the check hashes about one device.
struct DeviceIdentity {
  CUuuid uuid;
  int pci_domain;
  int pci_bus;
  int pci_device;
};

struct IntegrityInputs {
  std::uint32_t driver_version;
  std::uint32_t caller_version;  // what the caller passes; its last digit picks the answer
  std::uint32_t process;         // getpid()
  std::uint32_t thread;          // pthread_self(), its low 32 bits
  const void* runtime_table;     // the CUDART_INTERFACE table the caller was given
  const void* integrity_table;   // this check's table
  const void* check_function;    // the function the caller called
  std::uint64_t unix_seconds;    // what the caller passes
  std::vector<DeviceIdentity> devices;
};

std::array<std::uint64_t, 2> integrity_value(const IntegrityInputs& inputs);

}  // namespace simcuda::driver
