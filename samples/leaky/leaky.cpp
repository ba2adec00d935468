// A CUDA program with planted leaks, for the quick start and the end-to-end tests.
//
// It allocates through most of the runtime's allocation family, from several threads, frees
// most of it, and leaks some at known lines. Every line that leaks carries a marker of the
// form  LEAK(kind, count, bytes)  that tests/e2e reads to know what `vramtrace leaks` must
// report: the kind, how many allocations that line leaves live, and their total bytes.
// One allocation is made to fail (a request far beyond any device), which must appear in
// the trace with its error code and never as a leak.
//
// It runs on a real GPU as well as on the simulated one in tests/simcuda.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kKiB = size_t{1} << 10;

void check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "leaky: %s failed: %s\n", what, cudaGetErrorString(result));
    std::exit(1);
  }
}

// Device buffers that are used and freed: none of these may be reported.
__attribute__((noinline)) void scratch_buffers() {
  for (int i = 0; i < 8; ++i) {
    void* p = nullptr;
    check(cudaMalloc(&p, (i + 1) * kMiB), "cudaMalloc");
    check(cudaFree(p), "cudaFree");
  }
}

// A cache that is filled and never emptied.
__attribute__((noinline)) void fill_cache(std::vector<void*>& cache) {
  for (int i = 0; i < 3; ++i) {
    void* p = nullptr;
    check(cudaMalloc(&p, 2 * kMiB), "cudaMalloc");  // LEAK(device, 3, 6291456)
    cache.push_back(p);
  }
}

// Pinned staging memory: one buffer freed, one forgotten.
__attribute__((noinline)) void staging_buffers() {
  void* kept = nullptr;
  check(cudaHostAlloc(&kept, 256 * kKiB, cudaHostAllocDefault), "cudaHostAlloc");
  check(cudaFreeHost(kept), "cudaFreeHost");
  void* forgotten = nullptr;
  check(cudaMallocHost(&forgotten, 64 * kKiB), "cudaMallocHost");  // LEAK(host_pinned, 1, 65536)
}

// A 2D buffer: the leak is the pitched size (width 4096 is already aligned, so the pitch is
// the width on every device).
__attribute__((noinline)) void image_buffer() {
  void* image = nullptr;
  size_t pitch = 0;
  check(cudaMallocPitch(&image, &pitch, 4096, 64), "cudaMallocPitch");  // LEAK(device, 1, 262144)
}

// Stream-ordered allocations: freed on the stream, except one.
__attribute__((noinline)) void stream_ordered() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  void* a = nullptr;
  void* b = nullptr;
  check(cudaMallocAsync(&a, 512 * kKiB, stream), "cudaMallocAsync");
  check(cudaMallocAsync(&b, 128 * kKiB, stream), "cudaMallocAsync");  // LEAK(async, 1, 131072)
  check(cudaFreeAsync(a, stream), "cudaFreeAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

// Each worker churns through managed memory and leaks one buffer at the same line.
__attribute__((noinline)) void worker(int id) {
  for (int i = 0; i < 100; ++i) {
    void* p = nullptr;
    check(cudaMallocManaged(&p, kKiB * (1 + (i + id) % 7), cudaMemAttachGlobal),
          "cudaMallocManaged");
    check(cudaFree(p), "cudaFree");
  }
  void* leaked = nullptr;
  const size_t bytes = 32 * kKiB;
  cudaError_t r =
      cudaMallocManaged(&leaked, bytes, cudaMemAttachGlobal);  // LEAK(managed, 4, 131072)
  check(r, "cudaMallocManaged");
}

// A request no device can satisfy: the error must reach us unchanged.
__attribute__((noinline)) void impossible_request() {
  void* p = nullptr;
  cudaError_t result = cudaMalloc(&p, size_t{1} << 50);
  std::printf("leaky: a 1 PiB request returned %d (%s), as it should\n", static_cast<int>(result),
              cudaGetErrorName(result));
  cudaGetLastError();  // clear the sticky error
}

}  // namespace

int main() {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  std::printf("leaky: %d device(s)\n", devices);

  scratch_buffers();
  std::vector<void*> cache;
  fill_cache(cache);
  staging_buffers();
  image_buffer();
  stream_ordered();
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) threads.emplace_back(worker, id);
  for (auto& t : threads) t.join();
  impossible_request();

  std::printf("leaky: done; 10 allocations left behind on purpose\n");
  return 0;
}
