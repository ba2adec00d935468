// Driver API: events. Work is never deferred, so an event is complete as soon as it is recorded
// (cuEventQuery and cuEventSynchronize succeed at once, as for an event never recorded), and it
// records the time then: CLOCK_MONOTONIC, from which cuEventElapsedTime measures. Events belong
// to the context current at cuEventCreate and go with it (reset or last release), as streams
// do; a destroyed or unknown event is CUDA_ERROR_INVALID_HANDLE. The legacy cuEventDestroy and
// cuEventElapsedTime (before _v2) behave as the current ones; the _ptsz variants of
// cuEventRecord (per-thread default stream) as the plain ones.

#include "api_support.h"
#include "capture.h"

using simcuda::driver::Captures;
using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::initialized;

namespace {

constexpr unsigned int kEventFlags =
    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

// In a capturing stream an event marks a point of the capture, for other streams to fork from
// or join at (capture.h), and records no time.
CUresult record(CUevent event, CUstream stream, unsigned int flags) {
  return in_context([&](Driver& driver, int) {
    if ((flags & ~CU_EVENT_RECORD_EXTERNAL) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) return result;
    if (const CUresult result = driver.check_event(event); result != CUDA_SUCCESS) return result;
    if (const auto captured = Captures::get().record_event(event, stream)) return *captured;
    return driver.record_event(event, stream);
  });
}

CUresult destroy(CUevent event) {
  return initialized([&](Driver& driver) { return driver.destroy_event(event); });
}

CUresult elapsed_time(float* milliseconds, CUevent start, CUevent end) {
  return initialized([&](Driver& driver) {
    if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.elapsed_time(start, end, milliseconds);
  });
}

CUresult check(CUevent event) {
  return initialized([&](Driver& driver) { return driver.check_event(event); });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  return in_context([&](Driver& driver, int device) {
    if (phEvent == nullptr || (Flags & ~kEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    // An interprocess event must not time, as documented.
    if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return driver.create_event(device, Flags, phEvent);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return record(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return record(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                                      unsigned int flags) {
  return record(hEvent, hStream, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                           unsigned int flags) {
  return record(hEvent, hStream, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  return check(hEvent);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  // A synchronization: the pools give back what they hold beyond their release thresholds.
  return initialized([&](Driver& driver) {
    const CUresult result = driver.check_event(hEvent);
    if (result == CUDA_SUCCESS) driver.release_pools_over_threshold();
    return result;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  return destroy(hEvent);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventDestroy(CUevent hEvent) {
  return destroy(hEvent);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart,
                                                     CUevent hEnd) {
  return elapsed_time(pMilliseconds, hStart, hEnd);
}

SIMCUDA_DRIVER_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart,
                                                  CUevent hEnd) {
  return elapsed_time(pMilliseconds, hStart, hEnd);
}
