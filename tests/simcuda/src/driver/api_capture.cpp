// Driver API: stream capture and graphs (capture.h).

#include "api_support.h"
#include "capture.h"

namespace {

using simcuda::driver::Captures;
using simcuda::driver::Driver;
using simcuda::driver::initialized;

CUresult is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  return initialized([&](Driver& driver) {
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) {
      return result;
    }
    *status = Captures::get().status(stream);
    return CUDA_SUCCESS;
  });
}

CUresult begin_capture(CUstream stream, CUstreamCaptureMode mode) {
  return initialized([&](Driver& driver) {
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) {
      return result;
    }
    return Captures::get().begin(stream, mode);
  });
}

CUresult graph_launch(CUgraphExec exec, CUstream stream) {
  return initialized([&](Driver& driver) {
    if (const CUresult result = driver.check_stream(stream); result != CUDA_SUCCESS) {
      return result;
    }
    return Captures::get().launch(exec, stream);
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

// The capture's id and graph for an active capture; its dependencies are the graph's last node,
// whose work follows every earlier node's (the simulation keeps each capture in order).
SIMCUDA_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                         CUstreamCaptureStatus* captureStatus_out,
                                                         cuuint64_t* id_out, CUgraph* graph_out,
                                                         const CUgraphNode** dependencies_out,
                                                         size_t* numDependencies_out) {
  return initialized([&](Driver& driver) {
    if (captureStatus_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(hStream); result != CUDA_SUCCESS) {
      return result;
    }
    *captureStatus_out = Captures::get().status(hStream, id_out, graph_out);
    if (*captureStatus_out == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      if (dependencies_out != nullptr) *dependencies_out = nullptr;
      if (numDependencies_out != nullptr) *numDependencies_out = 0;
    }
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
      *mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *mode = Captures::get().exchange_mode(*mode);
  return CUDA_SUCCESS;
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(hStream, mode);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                                            CUstreamCaptureMode mode) {
  return begin_capture(hStream, mode);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return initialized([&](Driver& driver) {
    if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = driver.check_stream(hStream); result != CUDA_SUCCESS) {
      return result;
    }
    return Captures::get().end(hStream, phGraph);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return cuStreamEndCapture(hStream, phGraph);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                           unsigned long long) {
  return initialized([&](Driver&) {
    if (phGraphExec == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return Captures::get().instantiate(hGraph, phGraphExec);
  });
}

// The CUDA 10 form: an error node and log, which instantiation here never fills.
SIMCUDA_DRIVER_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                  CUgraphNode* phErrorNode, char* logBuffer,
                                                  size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

// Nothing to upload: a launch finds everything in place.
SIMCUDA_DRIVER_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  return initialized([&](Driver& driver) {
    if (const CUresult result = driver.check_stream(hStream); result != CUDA_SUCCESS) {
      return result;
    }
    return hGraphExec != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return cuGraphUpload(hGraphExec, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return graph_launch(hGraphExec, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return graph_launch(hGraphExec, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  return initialized([&](Driver&) { return Captures::get().destroy_graph(hGraph); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return initialized([&](Driver&) { return Captures::get().destroy_exec(hGraphExec); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes,
                                               size_t* numNodes) {
  return initialized([&](Driver&) { return Captures::get().graph_nodes(hGraph, nodes, numNodes); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  return initialized([&](Driver&) { return Captures::get().node_type(hNode, type); });
}
