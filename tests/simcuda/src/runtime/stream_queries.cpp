// Streams beyond creation and synchronisation: priorities, queries, host functions, and
// capture. The driver runs nothing asynchronously, so a stream is always idle (cudaStreamQuery
// is cudaSuccess) and a host function or callback runs at once on the calling thread.
//
// Capture: no stream is ever capturing. Beginning a capture is cudaErrorNotSupported (a graph
// could not be replayed: kernels do not run); the queries say "not capturing", which is what
// PyTorch's allocator asks before every cudaMalloc; the thread's capture mode is kept, as
// cudaThreadExchangeStreamCaptureMode swaps it.

#include <memory>

#include "entry_support.h"

namespace {

using simcuda::record;
using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::in_context;

thread_local cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

// A runtime callback called by the driver: the driver's status read as the runtime's error.
struct Callback {
  cudaStreamCallback_t function;
  void* user_data;
};

void CUDA_CB call_runtime_callback(CUstream stream, CUresult status, void* data) {
  const std::unique_ptr<Callback> callback(static_cast<Callback*>(data));
  callback->function(stream, from_driver(status), callback->user_data);
}

// Checks the stream with the driver, as every capture query does first.
cudaError_t check_stream(const Driver& driver, cudaStream_t stream) {
  return from_driver(driver.cuStreamQuery(stream));
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
    if (const cudaError_t error = check_stream(driver, stream); error != cudaSuccess) return error;
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetCaptureInfo(
    cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
    unsigned long long* id_out, cudaGraph_t* graph_out, const cudaGraphNode_t** dependencies_out,
    const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return in_context([&](const Driver& driver) {
    if (captureStatus_out == nullptr) return cudaErrorInvalidValue;
    if (const cudaError_t error = check_stream(driver, stream); error != cudaSuccess) return error;
    // Not capturing: the status, and nothing else is written, as documented.
    *captureStatus_out = cudaStreamCaptureStatusNone;
    static_cast<void>(id_out);
    static_cast<void>(graph_out);
    static_cast<void>(dependencies_out);
    static_cast<void>(edgeData_out);
    static_cast<void>(numDependencies_out);
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return record(cudaErrorInvalidValue);
  const cudaStreamCaptureMode previous = capture_mode;
  capture_mode = *mode;
  *mode = previous;
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode) {
  static_cast<void>(stream);
  static_cast<void>(mode);
  return record(cudaErrorNotSupported);
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

// Never capturing, so ending a capture is the documented error for a stream that is not.
SIMCUDA_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  static_cast<void>(stream);
  static_cast<void>(pGraph);
  return record(cudaErrorIllegalState);
}

SIMCUDA_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(
    cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  static_cast<void>(stream);
  static_cast<void>(dependencies);
  static_cast<void>(dependencyData);
  static_cast<void>(numDependencies);
  static_cast<void>(flags);
  return record(cudaErrorIllegalState);
}
