#include "analysis/values/cuda_errors.h"

#include <algorithm>
#include <array>

namespace vramtrace::analysis {
namespace {

struct NamedError {
  int code;
  std::string_view name;
};

// Sorted by code. The codes that allocation and free calls return in practice.
constexpr std::array<NamedError, 24> kErrors{{
    {0, "cudaSuccess"},
    {1, "cudaErrorInvalidValue"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {4, "cudaErrorCudartUnloading"},
    {12, "cudaErrorInvalidPitchValue"},
    {17, "cudaErrorInvalidDevicePointer"},
    {34, "cudaErrorStubLibrary"},
    {35, "cudaErrorInsufficientDriver"},
    {36, "cudaErrorCallRequiresNewerDriver"},
    {46, "cudaErrorDevicesUnavailable"},
    {100, "cudaErrorNoDevice"},
    {101, "cudaErrorInvalidDevice"},
    {201, "cudaErrorDeviceUninitialized"},
    {304, "cudaErrorOperatingSystem"},
    {400, "cudaErrorInvalidResourceHandle"},
    {700, "cudaErrorIllegalAddress"},
    {712, "cudaErrorHostMemoryAlreadyRegistered"},
    {719, "cudaErrorLaunchFailure"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {802, "cudaErrorSystemNotReady"},
    {911, "cudaErrorExternalDevice"},
    {999, "cudaErrorUnknown"},
}};

}  // namespace

std::optional<std::string_view> cuda_error_name(int code) {
  const auto it = std::lower_bound(kErrors.begin(), kErrors.end(), code,
                                   [](const NamedError& e, int c) { return e.code < c; });
  if (it == kErrors.end() || it->code != code) return std::nullopt;
  return it->name;
}

}  // namespace vramtrace::analysis
