/*
 * simcuda: the runtime's entry points that nvcc's generated host code calls (the toolkit
 * declares them in crt/host_runtime.h and crt/device_functions.h, for that code only): module
 * registration at load, and the launch sequence of a <<<...>>> call. Every library built with
 * nvcc, PyTorch's included, imports them, so a runtime that hosts such libraries must export
 * them. Registration keeps what cudaGetSymbolAddress needs; launches are accepted and not run.
 */
#ifndef SIMCUDA_CUDA_KERNEL_REGISTRATION_H
#define SIMCUDA_CUDA_KERNEL_REGISTRATION_H

#include "driver_types.h"

#ifndef CUDARTAPI
#define CUDARTAPI
#endif

#ifdef __cplusplus
extern "C" {
#endif

extern void** CUDARTAPI __cudaRegisterFatBinary(void* fatCubin);
extern void CUDARTAPI __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
extern void CUDARTAPI __cudaUnregisterFatBinary(void** fatCubinHandle);
extern void CUDARTAPI __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun,
                                             char* deviceFun, const char* deviceName,
                                             int thread_limit, struct uint3* tid, struct uint3* bid,
                                             struct dim3* bDim, struct dim3* gDim, int* wSize);
extern void CUDARTAPI __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                        const char* deviceName, int ext, size_t size, int constant,
                                        int global);
extern unsigned CUDARTAPI __cudaPushCallConfiguration(struct dim3 gridDim, struct dim3 blockDim,
                                                      size_t sharedMem, struct CUstream_st* stream);
extern cudaError_t CUDARTAPI __cudaPopCallConfiguration(struct dim3* gridDim, struct dim3* blockDim,
                                                        size_t* sharedMem, void* stream);
extern cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
extern cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, struct dim3 gridDim,
                                                struct dim3 blockDim, void** args, size_t sharedMem,
                                                cudaStream_t stream);
extern cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, struct dim3 gridDim,
                                                     struct dim3 blockDim, void** args,
                                                     size_t sharedMem, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_CUDA_KERNEL_REGISTRATION_H */
