// Events: the driver's (cuEvent*), created in the thread's current context. Nothing runs
// asynchronously on the simulated GPU, so an event is complete as soon as it is recorded and
// waiting on one returns at once; elapsed times are those between the two records.

#include "entry_support.h"

namespace {

using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::in_context;

cudaError_t event_create(cudaEvent_t* event, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    constexpr unsigned int kKnownFlags =
        cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (event == nullptr || (flags & ~kKnownFlags) != 0) return cudaErrorInvalidValue;
    // An interprocess event must not time, as documented.
    if ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0) {
      return cudaErrorInvalidValue;
    }
    // The runtime's flag values are the driver's (CU_EVENT_*).
    return from_driver(driver.cuEventCreate(event, flags));
  });
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return event_create(event, cudaEventDefault);
}

SIMCUDA_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return event_create(event, flags);
}

SIMCUDA_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuEventDestroy(event)); });
}

SIMCUDA_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuEventRecord(event, stream)); });
}

SIMCUDA_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                    unsigned int flags) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuEventRecordWithFlags(event, stream, flags));
  });
}

SIMCUDA_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  return in_context([&](const Driver& driver) { return from_driver(driver.cuEventQuery(event)); });
}

SIMCUDA_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuEventSynchronize(event)); });
}

SIMCUDA_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuEventElapsedTime(ms, start, end)); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                               unsigned int flags) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuStreamWaitEvent(stream, event, flags));
  });
}
