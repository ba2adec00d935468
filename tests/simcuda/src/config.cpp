#include "config.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "arena.h"
#include "size_parse.h"

namespace simcuda {
namespace {

// nullptr when unset; an empty value counts as unset, so that `SIMCUDA_X= cmd` restores the
// default.
const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

std::string describe(const char* name, const char* value, const char* expected) {
  return std::string(name) + "='" + value + "' is not " + expected;
}

}  // namespace

ConfigResult read_config_from_environment() {
  ConfigResult result;
  Config& config = result.config;

  if (const char* value = variable("SIMCUDA_DEVICE_COUNT")) {
    const std::string_view text(value);
    int count = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec != std::errc{} || end != text.data() + text.size() || count < 0 || count > kMaxDevices) {
      result.error = describe("SIMCUDA_DEVICE_COUNT", value, "a device count in 0..64");
      return result;
    }
    config.device_count = count;
  }

  if (const char* value = variable("SIMCUDA_DEVICE_MEMORY")) {
    const auto bytes = parse_size(value);
    // Capacity is counted in whole allocation units; a remainder could never be handed out.
    if (!bytes || *bytes < Arena::kAlignment) {
      result.error = describe("SIMCUDA_DEVICE_MEMORY", value,
                              "a size of at least 512 bytes (e.g. 1048576, 512M, 16GiB)");
      return result;
    }
    config.device_memory = static_cast<std::size_t>(*bytes / Arena::kAlignment * Arena::kAlignment);
  }

  if (const char* value = variable("SIMCUDA_NO_DEVICE")) {
    const std::string_view text(value);
    if (text != "0" && text != "1") {
      result.error = describe("SIMCUDA_NO_DEVICE", value, "0 or 1");
      return result;
    }
    config.no_device = text == "1";
  }
  return result;
}

}  // namespace simcuda
