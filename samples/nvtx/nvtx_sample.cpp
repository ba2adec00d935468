// A CUDA program annotated with NVTX 3 (the CUDA toolkit's header-only API) and with
// vramtrace's own C API, allocating inside its ranges: for the end-to-end test of markers and
// as an example of both APIs.
//
// Under `vramtrace run` (which sets NVTX_INJECTION64_PATH to its shim), every NVTX call and
// every vramtrace_* call below is one marker of the trace. The C API is looked up with
// dlsym, so the program also runs without vramtrace; then those calls are skipped.
//
// The sequence is fixed; tests/e2e checks it marker by marker. Markers are numbered below in
// the order they are recorded (type, domain, name, and the level that push and pop return);
// all on the main thread but marker 9. With --expect-levels the
// program also checks the levels that push and pop return, and exits 1 if one is wrong: a
// tool must be attached then (without one, NVTX returns NVTX_NO_PUSH_POP_TRACKING).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvToolsExt.h>
#include <vramtrace/vramtrace.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool g_expect_levels = false;
int g_failures = 0;

void check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "nvtx_sample: %s failed: %s\n", what, cudaGetErrorString(result));
    std::exit(1);
  }
}

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

// NVTX's push and pop return the level of the range opened or closed.
void level(int got, int expected, const char* call) {
  if (g_expect_levels && got != expected) {
    std::fprintf(stderr, "nvtx_sample: %s returned %d, expected %d\n", call, got, expected);
    ++g_failures;
  }
}

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a;
  std::memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

// vramtrace's C API, present only when the shim is loaded (vramtrace/vramtrace.h).
struct VramtraceApi {
  vramtrace_mark_fn mark = nullptr;
  vramtrace_range_push_fn push = nullptr;
  vramtrace_range_pop_fn pop = nullptr;

  VramtraceApi() {
    mark = reinterpret_cast<vramtrace_mark_fn>(dlsym(RTLD_DEFAULT, "vramtrace_mark"));
    push = reinterpret_cast<vramtrace_range_push_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_push"));
    pop = reinterpret_cast<vramtrace_range_pop_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_pop"));
  }
  bool present() const { return mark != nullptr && push != nullptr && pop != nullptr; }
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-levels") == 0) {
      g_expect_levels = true;
    } else {
      std::fprintf(stderr, "usage: nvtx_sample [--expect-levels]\n");
      return 2;
    }
  }
  const VramtraceApi api;

  // 1. MARK "sample:start". The first NVTX call: NVTX loads the injection library here.
  nvtxMarkA("sample:start");

  // 2. PUSH "epoch" (level 0), holding a 1 MiB allocation (freed before marker 18).
  level(nvtxRangePushA("epoch"), 0, "nvtxRangePushA(epoch)");
  void* a = device_alloc(1 * kMiB);
  {
    // 3. PUSH "forward" (level 1).
    level(nvtxRangePushA("forward"), 1, "nvtxRangePushA(forward)");
    // 4. PUSH "layer1" (level 2), ARGB 0xFF00FF00, category 1: 2 MiB allocated and freed.
    nvtxEventAttributes_t layer = attributes();
    layer.colorType = NVTX_COLOR_ARGB;
    layer.color = 0xFF00FF00;
    layer.category = 1;
    layer.messageType = NVTX_MESSAGE_TYPE_ASCII;
    layer.message.ascii = "layer1";
    level(nvtxRangePushEx(&layer), 2, "nvtxRangePushEx(layer1)");
    void* b = device_alloc(2 * kMiB);
    check(cudaFree(b), "cudaFree");
    // 5., 6. POP (level 2), POP (level 1).
    level(nvtxRangePop(), 2, "nvtxRangePop(layer1)");
    level(nvtxRangePop(), 1, "nvtxRangePop(forward)");
  }
  // 7. POP (level 0).
  level(nvtxRangePop(), 0, "nvtxRangePop(epoch)");

  // 8. START "async-load" on the main thread; 9. END on a worker thread, which allocates
  //    3 MiB inside the range (freed before marker 18). Both carry the same range id.
  const nvtxRangeId_t load = nvtxRangeStartA("async-load");
  void* c = nullptr;
  std::thread([&] {
    c = device_alloc(3 * kMiB);
    nvtxRangeEnd(load);
  }).join();

  // A domain and a registered string: no markers by themselves.
  nvtxDomainHandle_t io = nvtxDomainCreateA("sample.io");
  nvtxStringHandle_t io_step = nvtxDomainRegisterStringA(io, "io-step");
  // 10. PUSH in domain "sample.io", "io-step" (the registered string), level 0,
  //     ARGB 0xFF3366CC, category 2, holding 4 MiB (freed before marker 18).
  nvtxEventAttributes_t step = attributes();
  step.colorType = NVTX_COLOR_ARGB;
  step.color = 0xFF3366CC;
  step.category = 2;
  step.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  step.message.registered = io_step;
  level(nvtxDomainRangePushEx(io, &step), 0, "nvtxDomainRangePushEx(io-step)");
  void* e = device_alloc(4 * kMiB);
  // 11. MARK in domain "sample.io", "io-mark".
  nvtxEventAttributes_t mark = attributes();
  mark.messageType = NVTX_MESSAGE_TYPE_ASCII;
  mark.message.ascii = "io-mark";
  nvtxDomainMarkEx(io, &mark);
  // 12. POP in domain "sample.io" (level 0).
  level(nvtxDomainRangePop(io), 0, "nvtxDomainRangePop(io)");

  // 13. PUSH "wide-ünïcødé-日本" (a wide string, recorded as UTF-8), level 0; 14. POP.
  level(nvtxRangePushW(L"wide-ünïcødé-日本"), 0, "nvtxRangePushW");
  level(nvtxRangePop(), 0, "nvtxRangePop(wide)");

  // 15.-17. The C API (source API): PUSH "api-phase" (level 0), MARK "api-mark", 5 MiB
  //         allocated and freed, POP (level 0).
  if (api.present()) {
    level(api.push("api-phase"), 0, "vramtrace_range_push(api-phase)");
    api.mark("api-mark");
    void* f = device_alloc(5 * kMiB);
    check(cudaFree(f), "cudaFree");
    level(api.pop(), 0, "vramtrace_range_pop");
  }

  // Everything is freed: this sample leaks nothing.
  check(cudaFree(a), "cudaFree");
  check(cudaFree(c), "cudaFree");
  check(cudaFree(e), "cudaFree");
  // 18. MARK "sample:end".
  nvtxMarkA("sample:end");

  if (g_failures != 0) return 1;
  std::printf("nvtx_sample: ok\n");
  return 0;
}
