// What the simulated GPU does not offer, exported so that the libraries importing it load:
// graphs built node by node and their user objects (captured graphs are: graphs.cpp), libraries of
// device code loaded at run time (device code is never loaded), and interprocess memory and event
// handles (each process has its own simulated devices). Each returns cudaErrorNotSupported, records
// it as the thread's last error, and writes nothing, so a caller takes its documented fallback or
// reports the error.

#include "entry_support.h"

namespace {

template <class... Ignored>
cudaError_t not_supported(const Ignored&...) {
  return simcuda::record(cudaErrorNotSupported);
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t* pDependencies,
                                            const cudaGraphEdgeData* dependencyData,
                                            size_t numDependencies,
                                            struct cudaGraphNodeParams* nodeParams) {
  return not_supported(pGraphNode, graph, pDependencies, dependencyData, numDependencies,
                       nodeParams);
}

SIMCUDA_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                                            cudaGraph_t graph,
                                                            unsigned int defaultLaunchValue,
                                                            unsigned int flags) {
  return not_supported(pHandle_out, graph, defaultLaunchValue, flags);
}

SIMCUDA_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                        cudaGraphNode_t* pDependencies,
                                                        cudaGraphEdgeData* edgeData,
                                                        size_t* pNumDependencies) {
  return not_supported(node, pDependencies, edgeData, pNumDependencies);
}

SIMCUDA_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                     unsigned int count, unsigned int flags) {
  return not_supported(graph, object, count, flags);
}

SIMCUDA_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr,
                                                cudaHostFn_t destroy, unsigned int initialRefcount,
                                                unsigned int flags) {
  return not_supported(object_out, ptr, destroy, initialRefcount, flags);
}

SIMCUDA_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  return not_supported(object, count);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                               enum cudaJitOption* jitOptions,
                                               void** jitOptionsValues, unsigned int numJitOptions,
                                               enum cudaLibraryOption* libraryOptions,
                                               void** libraryOptionValues,
                                               unsigned int numLibraryOptions) {
  return not_supported(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                       libraryOptionValues, numLibraryOptions);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryLoadFromFile(
    cudaLibrary_t* library, const char* fileName, enum cudaJitOption* jitOptions,
    void** jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption* libraryOptions,
    void** libraryOptionValues, unsigned int numLibraryOptions) {
  return not_supported(library, fileName, jitOptions, jitOptionsValues, numJitOptions,
                       libraryOptions, libraryOptionValues, numLibraryOptions);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  return not_supported(library);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library,
                                                const char* name) {
  return not_supported(pKernel, library, name);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib) {
  return not_supported(count, lib);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                const char* name) {
  return not_supported(dptr, bytes, library, name);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                 const char* name) {
  return not_supported(dptr, bytes, library, name);
}

SIMCUDA_EXPORT cudaError_t cudaLibraryGetUnifiedFunction(void** fptr, cudaLibrary_t library,
                                                         const char* symbol) {
  return not_supported(fptr, library, symbol);
}

SIMCUDA_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  return not_supported(handle, devPtr);
}

SIMCUDA_EXPORT cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle,
                                                unsigned int flags) {
  return not_supported(devPtr, handle, flags);
}

SIMCUDA_EXPORT cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  return not_supported(devPtr);
}

SIMCUDA_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  return not_supported(handle, event);
}

SIMCUDA_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  return not_supported(event, handle);
}
