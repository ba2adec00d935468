// main() for simcuda's API tests: each test executable runs on one simulated machine,
// described by SIMCUDA_* environment variables that it sets before the libraries' first call
// (when the driver's cuInit and the runtime's driver loading read them), whatever the caller's
// environment says.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <utility>

namespace simcuda_test {

// A value of nullptr removes the variable.
using Variable = std::pair<const char*, const char*>;

inline int run_on_machine(int argc, char** argv, std::initializer_list<Variable> machine) {
  for (const char* name : {"SIMCUDA_DEVICE_COUNT", "SIMCUDA_DEVICE_MEMORY", "SIMCUDA_NO_DEVICE",
                           "SIMCUDA_DRIVER_PATH"}) {
    unsetenv(name);
  }
  for (const auto& [name, value] : machine) {
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace simcuda_test
