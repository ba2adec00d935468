// Driver API: streams. Streams are handles only, since no work is ever deferred: 0,
// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the current context's implicit streams, created
// streams are valid until destroyed or until their context is reset, and anything else is
// CUDA_ERROR_INVALID_HANDLE.
//
// Everything put in a stream has finished when the call returns, so a stream is always idle
// (cuStreamQuery: CUDA_SUCCESS), waiting on an event waits for nothing, and host functions
// (cuLaunchHostFunc, cuStreamAddCallback) run at once, on the calling thread, before the call
// returns; the driver's lock is not held while they run. cuStreamWriteValue32 writes its value
// then and there. Priorities are kept, clamped to the range cuCtxGetStreamPriorityRange reports,
// and change nothing. The _ptsz variants (per-thread default stream) behave as the plain ones.

#include <cstdint>

#include "api_support.h"
#include "capture.h"

using simcuda::driver::Captures;
using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::kGreatestStreamPriority;
using simcuda::driver::kLeastStreamPriority;

namespace {

CUresult create(CUstream* stream, unsigned int flags, int priority) {
  return in_context([&](Driver& driver, int device) {
    if (stream == nullptr || (flags & ~CU_STREAM_NON_BLOCKING) != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // Out-of-range priorities are clamped, as documented. Lower numbers are greater priorities.
    const int clamped = priority > kLeastStreamPriority      ? kLeastStreamPriority
                        : priority < kGreatestStreamPriority ? kGreatestStreamPriority
                                                             : priority;
    return driver.create_stream(device, flags, clamped, stream);
  });
}

// Waiting for a capturing stream is an error that ends its capture (capture.h).
CUresult synchronize(CUstream stream) {
  return in_context([&](Driver& driver, int) {
    CUresult result = driver.check_stream(stream);
    if (result == CUDA_SUCCESS) result = Captures::get().check_stream_sync(stream);
    if (result == CUDA_SUCCESS) driver.release_pools_over_threshold();
    return result;
  });
}

CUresult destroy(CUstream stream) {
  return in_context([&](Driver& driver, int) {
    const CUresult result = driver.destroy_stream(stream);
    if (result == CUDA_SUCCESS) Captures::get().forget_stream(stream);
    return result;
  });
}

// Flags, priority and device of a stream, with the output checked.
template <class Out, class Pick>
CUresult property(CUstream stream, Out* out, Pick&& pick) {
  return in_context([&](Driver& driver, int current_device) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned int flags = 0;
    int priority = 0;
    int device = 0;
    if (const CUresult result =
            driver.stream_properties(stream, current_device, &flags, &priority, &device);
        result != CUDA_SUCCESS) {
      return result;
    }
    *out = pick(flags, priority, device, driver);
    return CUDA_SUCCESS;
  });
}

CUresult priority_of(CUstream stream, int* priority) {
  return property(stream, priority, [](unsigned int, int value, int, Driver&) { return value; });
}

CUresult flags_of(CUstream stream, unsigned int* flags) {
  return property(stream, flags, [](unsigned int value, int, int, Driver&) { return value; });
}

// A stream's context is its device's primary context (for the implicit ones, the current one).
CUresult context_of(CUstream stream, CUcontext* pctx) {
  return property(stream, pctx, [](unsigned int, int, int device, Driver& driver) {
    return driver.primary_context(device);
  });
}

CUresult wait_event(CUstream stream, CUevent event, unsigned int flags) {
  return in_context([&](Driver& driver, int) {
    if ((flags & ~CU_EVENT_WAIT_EXTERNAL) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) return result;
    if (const CUresult result = driver.check_event(event); result != CUDA_SUCCESS) return result;
    // Forks and joins of captures; otherwise the event's work is done, and there is nothing to
    // wait for.
    return Captures::get().wait_event(stream, event).value_or(CUDA_SUCCESS);
  });
}

// Runs `call` once the stream is checked, outside the driver's lock: a host function may take
// locks of its own, and must not find the driver's held.
template <class Call>
CUresult run_host_function(CUstream stream, Call&& call) {
  const CUresult result =
      in_context([&](Driver& driver, int) { return driver.check_stream(stream); });
  if (result != CUDA_SUCCESS) return result;
  // In a capturing stream, a node of the graph, called at each launch.
  if (const auto captured = Captures::get().capture(stream, CU_GRAPH_NODE_TYPE_HOST, [call] {
        call();
        return CUDA_SUCCESS;
      })) {
    return *captured;
  }
  call();
  return result;
}

CUresult launch_host_function(CUstream stream, CUhostFn fn, void* user_data) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return run_host_function(stream, [fn, user_data] { fn(user_data); });
}

CUresult add_callback(CUstream stream, CUstreamCallback callback, void* user_data,
                      unsigned int flags) {
  // flags is reserved and must be 0.
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return run_host_function(
      stream, [callback, stream, user_data] { callback(stream, CUDA_SUCCESS, user_data); });
}

CUresult write_value32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return in_context([&](Driver& driver, int) {
    if ((flags & ~CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) return result;
    return driver.fill32(addr, value, 1);
  });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return create(phStream, Flags, kLeastStreamPriority);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags,
                                                          int priority) {
  return create(phStream, flags, priority);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamQuery(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  return destroy(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  return destroy(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  return priority_of(hStream, priority);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  return priority_of(hStream, priority);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  return flags_of(hStream, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  return flags_of(hStream, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  return context_of(hStream, pctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  return context_of(hStream, pctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                                 unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                                      unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return launch_host_function(hStream, fn, userData);
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn,
                                                     void* userData) {
  return launch_host_function(hStream, fn, userData);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                                   void* userData, unsigned int flags) {
  return add_callback(hStream, callback, userData, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                                        void* userData, unsigned int flags) {
  return add_callback(hStream, callback, userData, flags);
}

// CUDA 11.7's _v2 and the CUDA 8.0 original take the same arguments; the difference (the
// original needed stream memory operations enabled in the kernel module) does not arise.
SIMCUDA_DRIVER_EXPORT CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr,
                                                       cuuint32_t value, unsigned int flags) {
  return write_value32(stream, addr, value, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                            cuuint32_t value, unsigned int flags) {
  return write_value32(stream, addr, value, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
                                                    cuuint32_t value, unsigned int flags) {
  return write_value32(stream, addr, value, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr,
                                                         cuuint32_t value, unsigned int flags) {
  return write_value32(stream, addr, value, flags);
}
