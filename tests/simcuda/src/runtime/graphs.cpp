// Graphs made by stream capture: instantiated, launched and destroyed by the driver (its
// capture.h), as the real runtime does.

#include "entry_support.h"

namespace {

using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::in_context;

cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuGraphInstantiateWithFlags(exec, graph, flags));
  });
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                unsigned long long flags) {
  return instantiate(pGraphExec, graph, flags);
}

SIMCUDA_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec,
                                                         cudaGraph_t graph,
                                                         unsigned long long flags) {
  return instantiate(pGraphExec, graph, flags);
}

SIMCUDA_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuGraphLaunch(graphExec, stream)); });
}

SIMCUDA_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuGraphDestroy(graph)); });
}

SIMCUDA_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuGraphExecDestroy(graphExec)); });
}

SIMCUDA_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes,
                                             size_t* numNodes) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuGraphGetNodes(graph, nodes, numNodes));
  });
}
