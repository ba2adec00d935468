// Streams beyond creation and synchronisation: priorities, queries, host functions, and
// capture. The driver runs nothing asynchronously, so a stream is always idle (cudaStreamQuery
// is cudaSuccess) and a host function or callback runs at once on the calling thread.
//
// Capture is the driver's (its capture.h), as with the real runtime: the libraries that carry
// their own runtime (cuBLAS) and the program see the same captures. A capture begun on another
// graph (cudaStreamBeginCaptureToGraph) and changing a capture's dependencies are not
// supported.

#include <memory>

#include "entry_support.h"

namespace {

using simcuda::record;
using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::in_context;

// A runtime callback called by the driver: the driver's status read as the runtime's error.
struct Callback {
  cudaStreamCallback_t function;
  void* user_data;
};

void CUDA_CB call_runtime_callback(CUstream stream, CUresult status, void* data) {
  const std::unique_ptr<Callback> callback(static_cast<Callback*>(data));
  callback->function(stream, from_driver(status), callback->user_data);
}

// Checks the stream with the driver (a query would be an error for a capturing stream).
cudaError_t check_stream(const Driver& driver, cudaStream_t stream) {
  unsigned int flags = 0;
  return from_driver(driver.cuStreamGetFlags(stream, &flags));
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags,
                                                        int priority) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuStreamCreateWithPriority(pStream, flags, priority));
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuStreamGetPriority(hStream, priority));
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return in_context([&](const Driver& driver) { return check_stream(driver, stream); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                                 void* userData, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    if (callback == nullptr || flags != 0) return cudaErrorInvalidValue;
    auto owned = std::make_unique<Callback>(Callback{callback, userData});
    const CUresult result =
        driver.cuStreamAddCallback(stream, call_runtime_callback, owned.get(), flags);
    // On success the callback owns (and freed) it.
    if (result == CUDA_SUCCESS) owned.release();
    return from_driver(result);
  });
}

SIMCUDA_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                                              void* userData) {
  return in_context([&](const Driver& driver) {
    if (fn == nullptr) return cudaErrorInvalidValue;
    return from_driver(driver.cuLaunchHostFunc(stream, fn, userData));
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                                 enum cudaStreamCaptureStatus* pCaptureStatus) {
  return in_context([&](const Driver& driver) {
    if (pCaptureStatus == nullptr) return cudaErrorInvalidValue;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const cudaError_t error = from_driver(driver.cuStreamIsCapturing(stream, &status));
    if (error == cudaSuccess) *pCaptureStatus = static_cast<cudaStreamCaptureStatus>(status);
    return error;
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetCaptureInfo(
    cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
    unsigned long long* id_out, cudaGraph_t* graph_out, const cudaGraphNode_t** dependencies_out,
    const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return in_context([&](const Driver& driver) {
    if (captureStatus_out == nullptr) return cudaErrorInvalidValue;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    const cudaError_t error = from_driver(driver.cuStreamGetCaptureInfo(
        stream, &status, &id, graph_out, dependencies_out, numDependencies_out));
    if (error != cudaSuccess) return error;
    *captureStatus_out = static_cast<cudaStreamCaptureStatus>(status);
    if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      if (id_out != nullptr) *id_out = id;
      // No dependency, so no edge data either.
      if (edgeData_out != nullptr) *edgeData_out = nullptr;
    }
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  return in_context([&](const Driver& driver) {
    if (mode == nullptr) return cudaErrorInvalidValue;
    return from_driver(
        driver.cuThreadExchangeStreamCaptureMode(reinterpret_cast<CUstreamCaptureMode*>(mode)));
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuStreamBeginCapture(stream, static_cast<CUstreamCaptureMode>(mode)));
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                         const cudaGraphNode_t* dependencies,
                                                         const cudaGraphEdgeData* dependencyData,
                                                         size_t numDependencies,
                                                         enum cudaStreamCaptureMode mode) {
  static_cast<void>(stream);
  static_cast<void>(graph);
  static_cast<void>(dependencies);
  static_cast<void>(dependencyData);
  static_cast<void>(numDependencies);
  static_cast<void>(mode);
  return record(cudaErrorNotSupported);
}

SIMCUDA_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuStreamEndCapture(stream, pGraph)); });
}

// The simulation keeps each capture's work in order, so a capturing stream's dependencies are
// always all of it: there is nothing to change, but the stream must be capturing.
SIMCUDA_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(
    cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  static_cast<void>(dependencies);
  static_cast<void>(dependencyData);
  static_cast<void>(numDependencies);
  return in_context([&](const Driver& driver) {
    if (flags > 1) return cudaErrorInvalidValue;  // add (0) or set (1)
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (const cudaError_t error = from_driver(driver.cuStreamIsCapturing(stream, &status));
        error != cudaSuccess) {
      return error;
    }
    return status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? cudaSuccess : cudaErrorIllegalState;
  });
}
