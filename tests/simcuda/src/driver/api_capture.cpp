// Driver API: stream capture. The simulated driver does not capture (graphs are not simulated),
// so no stream is ever capturing: the queries answer that, beginning a capture is
// CUDA_ERROR_NOT_SUPPORTED, and ending one that never began is the real driver's error.

#include "api_support.h"

namespace {

using simcuda::driver::Driver;
using simcuda::driver::initialized;

// The capture mode of the calling thread (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  return initialized([&](Driver& driver) {
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) {
      return result;
    }
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuStreamIsCapturing(CUstream hStream,
                                                   CUstreamCaptureStatus* captureStatus) {
  return is_capturing(hStream, captureStatus);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                                        CUstreamCaptureStatus* captureStatus) {
  return is_capturing(hStream, captureStatus);
}

// Outside a capture only the status is written.
SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                         CUstreamCaptureStatus* captureStatus_out,
                                                         cuuint64_t*, CUgraph*, const CUgraphNode**,
                                                         size_t*) {
  return is_capturing(hStream, captureStatus_out);
}

SIMCUDA_DRIVER_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
      *mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUstreamCaptureMode previous = thread_capture_mode;
  thread_capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode) {
  return initialized([&](Driver& driver) {
    if (const CUresult result = driver.check_stream(hStream); result != CUDA_SUCCESS) {
      return result;
    }
    return CUDA_ERROR_NOT_SUPPORTED;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return initialized([&](Driver& driver) {
    if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(hStream); result != CUDA_SUCCESS) {
      return result;
    }
    return CUDA_ERROR_ILLEGAL_STATE;  // the stream is not capturing
  });
}
