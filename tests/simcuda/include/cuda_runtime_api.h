/*
 * simcuda: the C API of NVIDIA's cuda_runtime_api.h, restricted to the allocation subset that
 * libcudart.so from tests/simcuda implements. Names, argument types and order, and exported
 * symbol names are those of the real CUDA 13 runtime, so that a program compiled against this
 * header also runs against the real libcudart, and the reverse. When the real toolkit is
 * installed, abi_check/ verifies every declaration here against it.
 *
 * Plain C, like the real one; C++ programs get the template overloads from cuda_runtime.h.
 */
#ifndef SIMCUDA_CUDA_RUNTIME_API_H
#define SIMCUDA_CUDA_RUNTIME_API_H

#include "driver_types.h"

/* The runtime version these declarations follow (1000 * major + 10 * minor). */
#define CUDART_VERSION 13000

/* Calling convention marker of the real header; empty on Linux. */
#ifndef CUDARTAPI
#define CUDARTAPI
#endif

/* Default arguments exist only in C++, as in the real header. abi_check/ predefines this as
 * empty, because a redeclaration may not repeat a default argument. */
#ifndef SIMCUDA_DEFAULT_ARG
#ifdef __cplusplus
#define SIMCUDA_DEFAULT_ARG(value) = value
#else
#define SIMCUDA_DEFAULT_ARG(value)
#endif
#endif

/* The real header marks deprecated functions unless CUDA_ENABLE_DEPRECATED is defined. */
#ifndef SIMCUDA_DEPRECATED
#if defined(CUDA_ENABLE_DEPRECATED)
#define SIMCUDA_DEPRECATED
#elif defined(__GNUC__)
#define SIMCUDA_DEPRECATED __attribute__((deprecated))
#else
#define SIMCUDA_DEPRECATED
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Device management. */
extern cudaError_t CUDARTAPI cudaDeviceReset(void);
extern cudaError_t CUDARTAPI cudaDeviceSynchronize(void);
extern cudaError_t CUDARTAPI cudaGetDeviceCount(int* count);
extern cudaError_t CUDARTAPI cudaSetDevice(int device);
extern cudaError_t CUDARTAPI cudaGetDevice(int* device);
extern cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device);

/* Error handling. */
extern cudaError_t CUDARTAPI cudaGetLastError(void);
extern cudaError_t CUDARTAPI cudaPeekAtLastError(void);
extern const char* CUDARTAPI cudaGetErrorName(cudaError_t error);
extern const char* CUDARTAPI cudaGetErrorString(cudaError_t error);

/* Streams. */
extern cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream);
extern cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags);
extern cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream);

/* Memory. */
extern cudaError_t CUDARTAPI cudaMallocManaged(
    void** devPtr, size_t size, unsigned int flags SIMCUDA_DEFAULT_ARG(cudaMemAttachGlobal));
extern cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size);
extern cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size);
extern cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width,
                                             size_t height);
extern cudaError_t CUDARTAPI cudaFree(void* devPtr);
extern cudaError_t CUDARTAPI cudaFreeHost(void* ptr);
extern cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags);
extern cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr,
                                          struct cudaExtent extent);
extern cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total);
extern cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count,
                                        enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count);

/* Stream-ordered allocator. */
extern cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep);
extern cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* memPool,
                                               const struct cudaMemPoolProps* poolProps);
extern cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                     cudaStream_t stream);

/* Versions. */
extern cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion);
extern cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion);

/* Driver entry points: driver functions by API name, through the driver's cuGetProcAddress.
 * cudaGetDriverEntryPoint uses the runtime's own version and is deprecated, as in the real
 * header, in favour of cudaGetDriverEntryPointByVersion. */
extern SIMCUDA_DEPRECATED cudaError_t CUDARTAPI cudaGetDriverEntryPoint(
    const char* symbol, void** funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));
extern cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));

/* Device properties and attributes (the driver's cuDeviceGetAttribute), peers, priorities. */
extern cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device);
extern cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr,
                                                    int device);
extern cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char* pciBusId, int len, int device);
extern cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* canAccessPeer, int device,
                                                     int peerDevice);
extern cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
extern cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int* leastPriority,
                                                              int* greatestPriority);
extern cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device,
                                                            enum cudaGraphMemAttributeType attr,
                                                            void* value);
extern cudaError_t CUDARTAPI cudaDeviceSetGraphMemAttribute(int device,
                                                            enum cudaGraphMemAttributeType attr,
                                                            void* value);

/* Events. */
extern cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* event);
extern cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
extern cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event);
extern cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event,
                                             cudaStream_t stream SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event,
                                                      cudaStream_t stream SIMCUDA_DEFAULT_ARG(0),
                                                      unsigned int flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event);
extern cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event);
extern cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

/* More of streams: priorities, queries, waits, host functions; capture (never active here). */
extern cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags,
                                                          int priority);
extern cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int* priority);
extern cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                                 unsigned int flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t stream,
                                                   cudaStreamCallback_t callback, void* userData,
                                                   unsigned int flags);
extern cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                                                void* userData);
extern cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
                                                   enum cudaStreamCaptureStatus* pCaptureStatus);
extern cudaError_t CUDARTAPI
cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
                         unsigned long long* id_out SIMCUDA_DEFAULT_ARG(0),
                         cudaGraph_t* graph_out SIMCUDA_DEFAULT_ARG(0),
                         const cudaGraphNode_t** dependencies_out SIMCUDA_DEFAULT_ARG(0),
                         const cudaGraphEdgeData** edgeData_out SIMCUDA_DEFAULT_ARG(0),
                         size_t* numDependencies_out SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode);
extern cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream,
                                                    enum cudaStreamCaptureMode mode);
extern cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                           const cudaGraphNode_t* dependencies,
                                                           const cudaGraphEdgeData* dependencyData,
                                                           size_t numDependencies,
                                                           enum cudaStreamCaptureMode mode);
extern cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph);
extern cudaError_t CUDARTAPI cudaStreamUpdateCaptureDependencies(
    cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags SIMCUDA_DEFAULT_ARG(0));

/* Asynchronous copies and memsets, host memory registration, pointers, pools' attributes. */
extern cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                             enum cudaMemcpyKind kind,
                                             cudaStream_t stream SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                               size_t spitch, size_t width, size_t height,
                                               enum cudaMemcpyKind kind,
                                               cudaStream_t stream SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src,
                                                 int srcDevice, size_t count,
                                                 cudaStream_t stream SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count,
                                             cudaStream_t stream SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags);
extern cudaError_t CUDARTAPI cudaHostUnregister(void* ptr);
extern cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                                      const void* ptr);
extern cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool,
                                                     enum cudaMemPoolAttr attr, void* value);
extern cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool,
                                                     enum cudaMemPoolAttr attr, void* value);
extern cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                                  const struct cudaMemAccessDesc* descList,
                                                  size_t count);

/* Kernels: launches are accepted and not run; module variables are host memory. */
extern cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim,
                                              void** args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                                 void** args);
extern cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void* func, dim3 gridDim,
                                                         dim3 blockDim, void** args,
                                                         size_t sharedMem, cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes* attr,
                                                   const void* func);
extern cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr,
                                                  int value);
extern cudaError_t CUDARTAPI cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
                                                             enum cudaFuncAttribute attr, int value,
                                                             int device);
extern cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
                                                                           const void* func,
                                                                           int blockSize,
                                                                           size_t dynamicSMemSize);
extern cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, const void* func, int blockSize, size_t dynamicSMemSize, unsigned int flags);
extern cudaError_t CUDARTAPI cudaGetSymbolAddress(void** devPtr, const void* symbol);
extern cudaError_t CUDARTAPI cudaMemcpyToSymbol(
    const void* symbol, const void* src, size_t count, size_t offset SIMCUDA_DEFAULT_ARG(0),
    enum cudaMemcpyKind kind SIMCUDA_DEFAULT_ARG(cudaMemcpyHostToDevice));
extern cudaError_t CUDARTAPI cudaProfilerStart(void);
extern cudaError_t CUDARTAPI cudaProfilerStop(void);

/* Not supported (cudaErrorNotSupported): graphs, user objects, libraries loaded at run time, IPC.
 */
extern cudaError_t CUDARTAPI cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t* pDependencies,
                                              const cudaGraphEdgeData* dependencyData,
                                              size_t numDependencies,
                                              struct cudaGraphNodeParams* nodeParams);
extern cudaError_t CUDARTAPI
cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out, cudaGraph_t graph,
                                 unsigned int defaultLaunchValue SIMCUDA_DEFAULT_ARG(0),
                                 unsigned int flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph);
extern cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec);
extern cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes,
                                               size_t* numNodes);
extern cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                  unsigned long long flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI
cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                              unsigned long long flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                          cudaGraphNode_t* pDependencies,
                                                          cudaGraphEdgeData* edgeData,
                                                          size_t* pNumDependencies);
extern cudaError_t CUDARTAPI cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                       unsigned int count SIMCUDA_DEFAULT_ARG(1),
                                                       unsigned int flags SIMCUDA_DEFAULT_ARG(0));
extern cudaError_t CUDARTAPI cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr,
                                                  cudaHostFn_t destroy,
                                                  unsigned int initialRefcount, unsigned int flags);
extern cudaError_t CUDARTAPI cudaUserObjectRelease(cudaUserObject_t object,
                                                   unsigned int count SIMCUDA_DEFAULT_ARG(1));
extern cudaError_t CUDARTAPI cudaLibraryLoadData(
    cudaLibrary_t* library, const void* code, enum cudaJitOption* jitOptions,
    void** jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption* libraryOptions,
    void** libraryOptionValues, unsigned int numLibraryOptions);
extern cudaError_t CUDARTAPI cudaLibraryLoadFromFile(
    cudaLibrary_t* library, const char* fileName, enum cudaJitOption* jitOptions,
    void** jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption* libraryOptions,
    void** libraryOptionValues, unsigned int numLibraryOptions);
extern cudaError_t CUDARTAPI cudaLibraryUnload(cudaLibrary_t library);
extern cudaError_t CUDARTAPI cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library,
                                                  const char* name);
extern cudaError_t CUDARTAPI cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib);
extern cudaError_t CUDARTAPI cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                  const char* name);
extern cudaError_t CUDARTAPI cudaLibraryGetManaged(void** dptr, size_t* bytes,
                                                   cudaLibrary_t library, const char* name);
extern cudaError_t CUDARTAPI cudaLibraryGetUnifiedFunction(void** fptr, cudaLibrary_t library,
                                                           const char* symbol);
extern cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr);
extern cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle,
                                                  unsigned int flags);
extern cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void* devPtr);
extern cudaError_t CUDARTAPI cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event);
extern cudaError_t CUDARTAPI cudaIpcOpenEventHandle(cudaEvent_t* event,
                                                    cudaIpcEventHandle_t handle);

/*
 * The per-thread-default-stream entry points, exported by the real library next to the plain
 * ones. The real header declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc
 * --default-stream per-thread); here they are always declared so that interposers can name
 * them. The _ptds/_ptsz suffixes follow the real exports.
 */
extern cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                             enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count);
extern cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size,
                                                          cudaMemPool_t memPool,
                                                          cudaStream_t stream);
extern SIMCUDA_DEPRECATED cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(
    const char* symbol, void** funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));
extern cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));

#ifdef __cplusplus
}
#endif

/* With per-thread default streams, calls go to the suffixed symbols, as with the real header. */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define cudaMemcpy cudaMemcpy_ptds
#define cudaMemset cudaMemset_ptds
#define cudaStreamSynchronize cudaStreamSynchronize_ptsz
#define cudaMallocAsync cudaMallocAsync_ptsz
#define cudaFreeAsync cudaFreeAsync_ptsz
#define cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz
#define cudaGetDriverEntryPoint cudaGetDriverEntryPoint_ptsz
#define cudaGetDriverEntryPointByVersion cudaGetDriverEntryPointByVersion_ptsz
#endif

#endif /* SIMCUDA_CUDA_RUNTIME_API_H */
