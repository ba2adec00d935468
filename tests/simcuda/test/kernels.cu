// Device code for the driver's module tests (driver_modules_test.cpp), built by nvcc into a fat
// binary, a cubin and PTX. It never runs: the simulated driver only reads it.

__device__ float scale_factor[16];
__constant__ int table[64];

extern "C" __global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f + scale_factor[0] + table[i % 64];
}

// At most 256 threads a block, 4 KiB of static shared memory.
extern "C" __global__ void __launch_bounds__(256) bounded(float* x) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = tile[255 - threadIdx.x];
}
