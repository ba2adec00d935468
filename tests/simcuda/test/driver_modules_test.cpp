// Device code on the simulated driver: modules and libraries read from real nvcc output
// (kernels.cu, built into SIMCUDA_TEST_KERNELS), their kernels, globals and attributes, the
// device memory they take, launches checked as a driver checks them, occupancy, context limits,
// and the private tables NVIDIA's runtime asks for (capture: driver_capture_test.cpp). On a machine
// of two 64 MiB devices.

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "driver_test_support.h"
#include "machine_main.h"

namespace {

using simcuda_test::host_pointer;

std::string kernels_path(const char* file) {
#ifdef SIMCUDA_TEST_KERNELS
  return std::string(SIMCUDA_TEST_KERNELS) + "/" + file;
#else
  (void)file;
  return {};
#endif
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');  // PTX is read as a string
  return bytes;
}

std::size_t free_memory() {
  std::size_t free = 0;
  std::size_t total = 0;
  EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  return free;
}

class Modules : public testing::Test {
 protected:
  void SetUp() override {
    if (kernels_path("kernels.fatbin").empty()) GTEST_SKIP() << "built without nvcc";
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
    fatbin_ = read_bytes(kernels_path("kernels.fatbin"));
    ASSERT_GT(fatbin_.size(), 1000u);
  }
  void TearDown() override {
    if (context_ != nullptr) cuDevicePrimaryCtxRelease(0);
  }

  // The fat binary loaded as a module, and its two kernels.
  struct Kernels {
    CUmodule module = nullptr;
    CUfunction add_one = nullptr;
    CUfunction bounded = nullptr;
  };
  Kernels load_kernels() {
    Kernels kernels;
    EXPECT_EQ(cuModuleLoadData(&kernels.module, fatbin_.data()), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleGetFunction(&kernels.add_one, kernels.module, "add_one"), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleGetFunction(&kernels.bounded, kernels.module, "bounded"), CUDA_SUCCESS);
    return kernels;
  }

  CUcontext context_ = nullptr;
  std::vector<char> fatbin_;
};

TEST_F(Modules, AFatBinaryHasItsKernelsAndGlobalsAndNothingElse) {
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, fatbin_.data()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&function, module, "add_one"), CUDA_SUCCESS);
  EXPECT_NE(function, nullptr);
  const char* name = nullptr;
  EXPECT_EQ(cuFuncGetName(&name, function), CUDA_SUCCESS);
  EXPECT_STREQ(name, "add_one");
  CUmodule owner = nullptr;
  EXPECT_EQ(cuFuncGetModule(&owner, function), CUDA_SUCCESS);
  EXPECT_EQ(owner, module);
  CUfunction missing = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&missing, module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);

  // Globals have their declared sizes and are device memory the program can copy to, but not
  // free: they go with the module.
  CUdeviceptr scale = 0;
  std::size_t bytes = 0;
  ASSERT_EQ(cuModuleGetGlobal(&scale, &bytes, module, "scale_factor"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 16 * sizeof(float));
  CUdeviceptr table = 0;
  ASSERT_EQ(cuModuleGetGlobal(&table, &bytes, module, "table"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 64 * sizeof(int));
  EXPECT_NE(scale, table);
  const float values[16] = {2.0f};
  EXPECT_EQ(cuMemcpyHtoD(scale, values, sizeof values), CUDA_SUCCESS);
  float back[16] = {};
  EXPECT_EQ(cuMemcpyDtoH(back, scale, sizeof back), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 2.0f);
  unsigned int memory_type = 0;
  EXPECT_EQ(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, scale),
            CUDA_SUCCESS);
  EXPECT_EQ(memory_type, static_cast<unsigned int>(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(cuMemFree(scale), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuModuleGetGlobal(&scale, &bytes, module, "no_such_global"), CUDA_ERROR_NOT_FOUND);

  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&function, module, "add_one"), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuFuncGetName(&name, function), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Modules, ALoadedModuleTakesDeviceMemoryUntilItIsUnloaded) {
  const std::size_t before = free_memory();
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, fatbin_.data()), CUDA_SUCCESS);
  const std::size_t loaded = free_memory();
  EXPECT_LT(loaded, before);
  // The code of two small kernels, their constant banks and the globals: kilobytes, not more.
  EXPECT_LT(before - loaded, 64u * 1024);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before);
}

TEST_F(Modules, FunctionAttributesAreTheCompiledOnes) {
  const auto [module, add_one, bounded] = load_kernels();
  ASSERT_NE(bounded, nullptr);
  int value = 0;
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bounded),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 256) << "__launch_bounds__(256)";
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, bounded), CUDA_SUCCESS);
  EXPECT_EQ(value, 4096) << "float tile[1024]";
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, add_one), CUDA_SUCCESS);
  EXPECT_GT(value, 0);
  EXPECT_LT(value, 64) << "a small kernel";
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, add_one),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1024);
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_BINARY_VERSION, add_one), CUDA_SUCCESS);
  EXPECT_EQ(value, 90) << "the sm_90 cubin, not the compute_80 PTX";
  EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_one),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 48 * 1024);
  // Dynamic shared memory up to the device's opt-in limit, less the static.
  EXPECT_EQ(
      cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024),
      CUDA_SUCCESS);
  EXPECT_EQ(
      cuFuncSetAttribute(bounded, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_NUM_REGS, 8), CUDA_ERROR_INVALID_VALUE)
      << "read-only";
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

TEST_F(Modules, LaunchesAreCheckedAsTheDriverChecksThem) {
  const auto [module, add_one, bounded] = load_kernels();
  ASSERT_NE(bounded, nullptr);
  CUdeviceptr data = 0;
  ASSERT_EQ(cuMemAlloc(&data, 4096), CUDA_SUCCESS);
  int n = 1024;
  void* params[] = {&data, &n};
  EXPECT_EQ(cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(add_one, 0, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "an empty grid";
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 1025, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "more threads than a block has";
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 1, 1, 65, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "a block is at most 64 deep";
  EXPECT_EQ(cuLaunchKernel(bounded, 1, 1, 1, 512, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "beyond the kernel's launch bounds";
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 64 * 1024, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "more dynamic shared memory than the kernel allows";
  ASSERT_EQ(cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 64 * 1024, nullptr, params, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 0, nullptr, params, params),
            CUDA_ERROR_INVALID_VALUE)
      << "arguments both ways";
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(0x1234),
                           params, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(&n), 1, 1, 1, 32, 1, 1, 0, nullptr, params,
                           nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  // A cooperative grid must be resident all at once: 132 multiprocessors of 8 such blocks.
  EXPECT_EQ(cuLaunchCooperativeKernel(add_one, 132 * 8, 1, 1, 256, 1, 1, 0, nullptr, params),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchCooperativeKernel(add_one, 132 * 8 + 1, 1, 1, 256, 1, 1, 0, nullptr, params),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);

  // A launch computes nothing: memory keeps what it held.
  std::vector<float> host(1024, 5.0f);
  ASSERT_EQ(cuMemcpyHtoD(data, host.data(), 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  std::vector<float> after(1024);
  ASSERT_EQ(cuMemcpyDtoH(after.data(), data, 4096), CUDA_SUCCESS);
  EXPECT_EQ(after, host);

  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_HANDLE)
      << "a function of an unloaded module";
  EXPECT_EQ(cuMemFree(data), CUDA_SUCCESS);
}

TEST_F(Modules, ClustersMustTileTheGridAndFitTheDevice) {
  const auto [module, add_one, bounded] = load_kernels();
  ASSERT_NE(add_one, nullptr);
  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = 1;
  cluster.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = 4;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  CUdeviceptr data = 0;
  int n = 0;
  void* params[] = {&data, &n};
  EXPECT_EQ(cuLaunchKernelEx(&config, add_one, params, nullptr), CUDA_SUCCESS);
  config.gridDimX = 3;
  EXPECT_EQ(cuLaunchKernelEx(&config, add_one, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "a grid of whole clusters";
  config.gridDimX = 16;
  cluster.value.clusterDim.x = 16;
  EXPECT_EQ(cuLaunchKernelEx(&config, add_one, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE)
      << "more than the portable 8";
  int clusters = 0;
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, add_one, &config),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  ASSERT_EQ(cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernelEx(&config, add_one, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, add_one, &config), CUDA_SUCCESS);
  EXPECT_GT(clusters, 0);
  int largest = 0;
  EXPECT_EQ(cuOccupancyMaxPotentialClusterSize(&largest, add_one, &config), CUDA_SUCCESS);
  EXPECT_EQ(largest, 16);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

TEST_F(Modules, OccupancyFollowsThreadsRegistersAndSharedMemory) {
  const auto [module, add_one, bounded] = load_kernels();
  ASSERT_NE(bounded, nullptr);
  int blocks = 0;
  EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add_one, 256, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 8) << "2048 threads a multiprocessor";
  EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add_one, 32, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 32) << "at most 32 blocks a multiprocessor";
  // 228 KiB a multiprocessor, 1 KiB reserved a block.
  EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add_one, 32, 56 * 1024),
            CUDA_SUCCESS);
  EXPECT_EQ(blocks, 4);
  EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, bounded, 512, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 0) << "beyond its launch bounds";
  std::size_t dynamic = 0;
  EXPECT_EQ(cuOccupancyAvailableDynamicSMemPerBlock(&dynamic, bounded, 2, 256), CUDA_SUCCESS);
  EXPECT_EQ(dynamic, 228u * 1024 / 2 - 1024 - 4096);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

TEST_F(Modules, ALibraryTakesMemoryOnlyOnceAContextUsesIt) {
  const std::size_t before = free_memory();
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, fatbin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  ASSERT_EQ(cuLibraryGetKernel(&kernel, library, "add_one"), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before) << "lazy loading: nothing loaded yet";
  CUkernel missing = nullptr;
  EXPECT_EQ(cuLibraryGetKernel(&missing, library, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  const char* name = nullptr;
  EXPECT_EQ(cuKernelGetName(&name, kernel), CUDA_SUCCESS);
  EXPECT_STREQ(name, "add_one");
  CUlibrary owner = nullptr;
  EXPECT_EQ(cuKernelGetLibrary(&owner, kernel), CUDA_SUCCESS);
  EXPECT_EQ(owner, library);

  CUfunction function = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&function, kernel), CUDA_SUCCESS);
  const std::size_t loaded = free_memory();
  EXPECT_LT(loaded, before) << "the module is loaded into this context at first use";
  CUmodule module = nullptr;
  ASSERT_EQ(cuLibraryGetModule(&module, library), CUDA_SUCCESS);
  CUfunction again = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&again, module, "add_one"), CUDA_SUCCESS);
  EXPECT_EQ(again, function);
  EXPECT_EQ(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE) << "it goes with its library";
  CUdeviceptr global = 0;
  std::size_t bytes = 0;
  EXPECT_EQ(cuLibraryGetGlobal(&global, &bytes, library, "table"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 64 * sizeof(int));
  EXPECT_EQ(free_memory(), loaded) << "loaded once";

  // A kernel stands for its function wherever a function is taken.
  int registers = 0;
  EXPECT_EQ(cuKernelGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel, 0), CUDA_SUCCESS);
  int through_function = 0;
  EXPECT_EQ(cuFuncGetAttribute(&through_function, CU_FUNC_ATTRIBUTE_NUM_REGS,
                               reinterpret_cast<CUfunction>(kernel)),
            CUDA_SUCCESS);
  EXPECT_EQ(through_function, registers);
  CUdeviceptr data = 0;
  int n = 0;
  void* params[] = {&data, &n};
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 32, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_SUCCESS);

  ASSERT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before);
  EXPECT_EQ(cuKernelGetFunction(&function, kernel), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuLibraryUnload(library), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Modules, CubinsPtxAndFilesLoadAndCodeForAnotherGpuDoesNot) {
  CUmodule cubin = nullptr;
  ASSERT_EQ(cuModuleLoad(&cubin, kernels_path("kernels.cubin").c_str()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&function, cubin, "bounded"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(cubin), CUDA_SUCCESS);

  const std::vector<char> ptx = read_bytes(kernels_path("kernels.ptx"));
  CUmodule from_ptx = nullptr;
  ASSERT_EQ(cuModuleLoadData(&from_ptx, ptx.data()), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&function, from_ptx, "add_one"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&function, from_ptx, "bounded"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(from_ptx), CUDA_SUCCESS);

  CUmodule module = nullptr;
  EXPECT_EQ(cuModuleLoad(&module, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
  EXPECT_EQ(cuModuleLoadData(&module, "not device code"), CUDA_ERROR_INVALID_IMAGE);

  // sm_80 code runs on no sm_90 device: refused at once by cuModuleLoad*, at first use of a
  // library (lazy loading).
  const std::vector<char> sm80 = read_bytes(kernels_path("kernels_sm80.fatbin"));
  EXPECT_EQ(cuModuleLoadData(&module, sm80.data()), CUDA_ERROR_NO_BINARY_FOR_GPU);
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, sm80.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  EXPECT_EQ(cuLibraryGetKernel(&kernel, library, "add_one"), CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);

  CUlibrary from_file = nullptr;
  ASSERT_EQ(cuLibraryLoadFromFile(&from_file, kernels_path("kernels.fatbin").c_str(), nullptr,
                                  nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryGetKernel(&kernel, from_file, "bounded"), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(from_file), CUDA_SUCCESS);
}

TEST_F(Modules, ContextLimitsHaveDefaultsAndTheSettableOnesCanBeSet) {
  std::size_t value = 0;
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 8u << 20);
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_CIG_ENABLED), CUDA_SUCCESS);
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 4096u);
  EXPECT_EQ(cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1), CUDA_ERROR_INVALID_VALUE) << "read-only";
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_MAX), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 1024u) << "a reset context has the defaults again";
  cuDevicePrimaryCtxRelease(0);
}

TEST_F(Modules, AStreamThatBeganNoCaptureIsNotCapturing) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_EQ(cuStreamIsCapturing(nullptr, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(cuStreamIsCapturing(reinterpret_cast<CUstream>(0x1234), &status),
            CUDA_ERROR_INVALID_HANDLE);
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
}

// The private tables (export_tables.h): the ones NVIDIA's runtime needs, and nothing for the
// others.
TEST_F(Modules, ThePrivateTablesTheRuntimeAsksFor) {
  const CUuuid unknown = {{1, 2, 3}};
  const void* table = &table;
  EXPECT_EQ(cuGetExportTable(&table, &unknown), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(table, nullptr);

  // Context-local storage: put, get, delete, in the current context when none is named.
  const CUuuid storage_id = {{static_cast<char>(0xc6), static_cast<char>(0x93), 0x33, 0x6e, 0x11,
                              0x21, static_cast<char>(0xdf), 0x11, static_cast<char>(0xa8),
                              static_cast<char>(0xc3), 0x68, static_cast<char>(0xf3), 0x55,
                              static_cast<char>(0xd8), static_cast<char>(0x95),
                              static_cast<char>(0x93)}};
  ASSERT_EQ(cuGetExportTable(&table, &storage_id), CUDA_SUCCESS);
  using Put = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
  using Delete = CUresult (*)(CUcontext, void*);
  using Get = CUresult (*)(void**, CUcontext, void*);
  const auto* entries = static_cast<void* const*>(table);
  const auto put = reinterpret_cast<Put>(entries[0]);
  const auto remove = reinterpret_cast<Delete>(entries[1]);
  const auto get = reinterpret_cast<Get>(entries[2]);
  int key = 0;
  int value = 0;
  void* found = nullptr;
  EXPECT_EQ(get(&found, nullptr, &key), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(put(nullptr, &key, &value, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(get(&found, context_, &key), CUDA_SUCCESS);
  EXPECT_EQ(found, &value);
  EXPECT_EQ(remove(nullptr, &key), CUDA_SUCCESS);
  EXPECT_EQ(get(&found, context_, &key), CUDA_ERROR_INVALID_HANDLE);

  // What is stored is handed to its destructor when the context is reset.
  static void* destroyed = nullptr;
  ASSERT_EQ(put(nullptr, &key, &value, [](CUcontext, void*, void* stored) { destroyed = stored; }),
            CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  EXPECT_EQ(destroyed, &value);
  EXPECT_EQ(get(&found, context_, &key), CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
