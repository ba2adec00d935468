// cuGetProcAddress of the simulated driver: from an API name, a CUDA version and the stream
// flags to the exported function with that ABI, as the real driver resolves them for a
// statically linked libcudart and for PyTorch's driver API table.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "machine_main.h"

namespace {

struct Row {
  const char* api;
  int version;
  bool per_thread;
  const char* symbol;
};

// The driver's entry point table, as the driver itself reads it.
#define SIMCUDA_ENTRY_POINT(api, version, variant, symbol) \
  Row{#api, version, std::string(#variant) == "PerThread", #symbol},
const std::vector<Row> kTable = {
#include "entry_points.inc"
};
#undef SIMCUDA_ENTRY_POINT

void* driver_symbol(const char* name) {
  static void* const library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr);
  return dlsym(library, name);
}

struct Found {
  CUresult result;
  CUdriverProcAddressQueryResult status;
  void* function;
};

Found find(const char* api, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  Found found{CUDA_ERROR_UNKNOWN, static_cast<CUdriverProcAddressQueryResult>(-1),
              reinterpret_cast<void*>(1)};
  found.result = cuGetProcAddress(api, &found.function, version, flags, &found.status);
  return found;
}

// The function cuGetProcAddress returns, or nullptr.
void* resolve(const char* api, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  const Found found = find(api, version, flags);
  return found.result == CUDA_SUCCESS ? found.function : nullptr;
}

TEST(ProcAddress, EveryRowOfTheTableIsExportedAndFoundByItsApiNameAndVersion) {
  ASSERT_GT(kTable.size(), 60u);
  for (const Row& row : kTable) {
    void* const exported = driver_symbol(row.symbol);
    ASSERT_NE(exported, nullptr) << row.symbol << " is not exported";
    const cuuint64_t flags = row.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                            : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    const Found found = find(row.api, row.version, flags);
    EXPECT_EQ(found.result, CUDA_SUCCESS) << row.api << " " << row.version;
    EXPECT_EQ(found.status, CU_GET_PROC_ADDRESS_SUCCESS) << row.api << " " << row.version;
    EXPECT_EQ(found.function, exported)
        << row.api << " " << row.version << " is not " << row.symbol;
  }
}

// What a program names cuMemAlloc in its source is the symbol cuda.h maps the name to; the
// driver must hand out the same function for the header's CUDA_VERSION.
TEST(ProcAddress, TheHeadersApiNamesAndTheDriverAgree) {
#define SIMCUDA_SAME_FUNCTION(api) \
  EXPECT_EQ(resolve(#api, CUDA_VERSION), reinterpret_cast<void*>(&api)) << #api;
  SIMCUDA_SAME_FUNCTION(cuMemAlloc)
  SIMCUDA_SAME_FUNCTION(cuMemFree)
  SIMCUDA_SAME_FUNCTION(cuMemAllocPitch)
  SIMCUDA_SAME_FUNCTION(cuMemAllocHost)
  SIMCUDA_SAME_FUNCTION(cuMemGetInfo)
  SIMCUDA_SAME_FUNCTION(cuDeviceTotalMem)
  SIMCUDA_SAME_FUNCTION(cuStreamDestroy)
  SIMCUDA_SAME_FUNCTION(cuDevicePrimaryCtxRelease)
  SIMCUDA_SAME_FUNCTION(cuDevicePrimaryCtxReset)
  SIMCUDA_SAME_FUNCTION(cuMemcpyHtoD)
  SIMCUDA_SAME_FUNCTION(cuMemcpyDtoH)
  SIMCUDA_SAME_FUNCTION(cuMemcpyDtoD)
  SIMCUDA_SAME_FUNCTION(cuMemsetD8)
  SIMCUDA_SAME_FUNCTION(cuGetProcAddress)
  SIMCUDA_SAME_FUNCTION(cuMemAllocAsync)
  SIMCUDA_SAME_FUNCTION(cuMemFreeAsync)
  SIMCUDA_SAME_FUNCTION(cuMemCreate)
  SIMCUDA_SAME_FUNCTION(cuMemMap)
  SIMCUDA_SAME_FUNCTION(cuInit)
  SIMCUDA_SAME_FUNCTION(cuMemGetAddressRange)
  SIMCUDA_SAME_FUNCTION(cuMemHostGetDevicePointer)
  SIMCUDA_SAME_FUNCTION(cuMemHostRegister)
  SIMCUDA_SAME_FUNCTION(cuMemcpyHtoDAsync)
  SIMCUDA_SAME_FUNCTION(cuMemcpyDtoHAsync)
  SIMCUDA_SAME_FUNCTION(cuMemcpyDtoDAsync)
  SIMCUDA_SAME_FUNCTION(cuMemsetD32)
  SIMCUDA_SAME_FUNCTION(cuCtxPushCurrent)
  SIMCUDA_SAME_FUNCTION(cuCtxPopCurrent)
  SIMCUDA_SAME_FUNCTION(cuEventDestroy)
  SIMCUDA_SAME_FUNCTION(cuEventElapsedTime)
  SIMCUDA_SAME_FUNCTION(cuDevicePrimaryCtxSetFlags)
  SIMCUDA_SAME_FUNCTION(cuDeviceGetUuid)
  SIMCUDA_SAME_FUNCTION(cuStreamWriteValue32)
  SIMCUDA_SAME_FUNCTION(cuLinkCreate)
  SIMCUDA_SAME_FUNCTION(cuLinkAddData)
  SIMCUDA_SAME_FUNCTION(cuEventRecord)
  SIMCUDA_SAME_FUNCTION(cuMemcpyAsync)
#undef SIMCUDA_SAME_FUNCTION
}

TEST(ProcAddress, TheVersionSelectsTheAbi) {
  // cuMemAlloc took 64-bit addresses and sizes in CUDA 3.2.
  EXPECT_EQ(resolve("cuMemAlloc", 2000), driver_symbol("cuMemAlloc"));
  EXPECT_EQ(resolve("cuMemAlloc", 3010), driver_symbol("cuMemAlloc"));
  EXPECT_EQ(resolve("cuMemAlloc", 3020), driver_symbol("cuMemAlloc_v2"));
  EXPECT_EQ(resolve("cuMemAlloc", 13000), driver_symbol("cuMemAlloc_v2"));
  EXPECT_EQ(resolve("cuMemFree", 12080), driver_symbol("cuMemFree_v2"));
  EXPECT_EQ(resolve("cuMemAllocHost", 12080), driver_symbol("cuMemAllocHost_v2"));
  EXPECT_EQ(resolve("cuMemAllocPitch", 12080), driver_symbol("cuMemAllocPitch_v2"));
  EXPECT_EQ(resolve("cuMemGetInfo", 12080), driver_symbol("cuMemGetInfo_v2"));
  EXPECT_EQ(resolve("cuDeviceTotalMem", 12080), driver_symbol("cuDeviceTotalMem_v2"));
  EXPECT_EQ(resolve("cuStreamDestroy", 3020), driver_symbol("cuStreamDestroy"));
  EXPECT_EQ(resolve("cuStreamDestroy", 4000), driver_symbol("cuStreamDestroy_v2"));
  EXPECT_EQ(resolve("cuDevicePrimaryCtxRelease", 10020),
            driver_symbol("cuDevicePrimaryCtxRelease"));
  EXPECT_EQ(resolve("cuDevicePrimaryCtxRelease", 11000),
            driver_symbol("cuDevicePrimaryCtxRelease_v2"));
  // CUDA 13.0 gave cuCtxSynchronize and cuCtxGetDevice a context argument.
  EXPECT_EQ(resolve("cuCtxSynchronize", 12080), driver_symbol("cuCtxSynchronize"));
  EXPECT_EQ(resolve("cuCtxSynchronize", 13000), driver_symbol("cuCtxSynchronize_v2"));
  EXPECT_EQ(resolve("cuCtxGetDevice", 12080), driver_symbol("cuCtxGetDevice"));
  EXPECT_EQ(resolve("cuCtxGetDevice", 13000), driver_symbol("cuCtxGetDevice_v2"));
  // And cuGetProcAddress itself gained the status in 12.0.
  EXPECT_EQ(resolve("cuGetProcAddress", 11080), driver_symbol("cuGetProcAddress"));
  EXPECT_EQ(resolve("cuGetProcAddress", 12000), driver_symbol("cuGetProcAddress_v2"));
}

// ABIs that changed after CUDA 11, for the stream and event calls PyTorch resolves.
TEST(ProcAddress, TheVersionSelectsTheEventAndStreamMemoryAbis) {
  EXPECT_EQ(resolve("cuEventElapsedTime", 12070), driver_symbol("cuEventElapsedTime"));
  EXPECT_EQ(resolve("cuEventElapsedTime", 12080), driver_symbol("cuEventElapsedTime_v2"));
  EXPECT_EQ(resolve("cuStreamWriteValue32", 11060), driver_symbol("cuStreamWriteValue32"));
  EXPECT_EQ(resolve("cuStreamWriteValue32", 11070), driver_symbol("cuStreamWriteValue32_v2"));
  EXPECT_EQ(resolve("cuStreamWriteValue32", 11060, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            driver_symbol("cuStreamWriteValue32_ptsz"));
  EXPECT_EQ(resolve("cuStreamWriteValue32", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            driver_symbol("cuStreamWriteValue32_v2_ptsz"));
  EXPECT_EQ(resolve("cuMemsetD32Async", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            driver_symbol("cuMemsetD32Async_ptsz"));
  EXPECT_EQ(resolve("cuDeviceGetUuid", 11030), driver_symbol("cuDeviceGetUuid"));
  EXPECT_EQ(resolve("cuDeviceGetUuid", 11040), driver_symbol("cuDeviceGetUuid_v2"));
  EXPECT_EQ(resolve("cuEventRecordWithFlags", 11000), nullptr) << "newer than 11.0";
}

TEST(ProcAddress, PerThreadVariantsOnlyWhenAskedFor) {
  constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(resolve("cuMemAllocAsync", 13000, kPerThread), driver_symbol("cuMemAllocAsync_ptsz"));
  EXPECT_EQ(resolve("cuMemAllocAsync", 13000), driver_symbol("cuMemAllocAsync"))
      << "the library's default is the legacy stream";
  EXPECT_EQ(resolve("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            driver_symbol("cuMemAllocAsync"));
  EXPECT_EQ(resolve("cuMemFreeAsync", 13000, kPerThread), driver_symbol("cuMemFreeAsync_ptsz"));
  EXPECT_EQ(resolve("cuMemAllocFromPoolAsync", 13000, kPerThread),
            driver_symbol("cuMemAllocFromPoolAsync_ptsz"));
  EXPECT_EQ(resolve("cuStreamSynchronize", 13000, kPerThread),
            driver_symbol("cuStreamSynchronize_ptsz"));
  EXPECT_EQ(resolve("cuMemcpyHtoD", 13000, kPerThread), driver_symbol("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(resolve("cuMemcpy", 13000, kPerThread), driver_symbol("cuMemcpy_ptds"));
  // Before the per-thread variants existed (CUDA 7.0), and for functions without one.
  EXPECT_EQ(resolve("cuMemcpyHtoD", 6050, kPerThread), driver_symbol("cuMemcpyHtoD_v2"));
  EXPECT_EQ(resolve("cuStreamCreate", 13000, kPerThread), driver_symbol("cuStreamCreate"));
  EXPECT_EQ(resolve("cuMemAlloc", 13000, kPerThread), driver_symbol("cuMemAlloc_v2"));
}

TEST(ProcAddress, UnknownNamesAndTooOldVersionsAreNotFound) {
  for (const char* name : {"cuNoSuchFunction", "cuMemAlloc_v2", "cuMemAllocAsync_ptsz", "",
                           "cudaMalloc", "cumemalloc"}) {
    const Found found = find(name, 13000);
    EXPECT_EQ(found.result, CUDA_ERROR_NOT_FOUND) << name;
    EXPECT_EQ(found.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) << name;
    EXPECT_EQ(found.function, nullptr) << name;
  }
  for (const auto& [name, version] :
       {std::pair{"cuMemAllocAsync", 11010}, std::pair{"cuMemCreate", 10010},
        std::pair{"cuGetProcAddress", 11020}, std::pair{"cuMemAlloc", 1000}}) {
    const Found found = find(name, version);
    EXPECT_EQ(found.result, CUDA_ERROR_NOT_FOUND) << name;
    EXPECT_EQ(found.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) << name;
    EXPECT_EQ(found.function, nullptr) << name;
  }
  void* function = nullptr;
  EXPECT_EQ(cuGetProcAddress("cuNoSuchFunction", &function, 13000, 0, nullptr),
            CUDA_ERROR_NOT_FOUND)
      << "the status is optional";
}

TEST(ProcAddress, RefusesWhatItCannotAnswer) {
  EXPECT_EQ(find("cuMemAlloc", 13010).result, CUDA_ERROR_INVALID_VALUE) << "newer than the driver";
  EXPECT_EQ(find("cuMemAlloc", 13000, 0x4).result, CUDA_ERROR_INVALID_VALUE) << "unknown flag";
  EXPECT_EQ(find(nullptr, 13000).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", nullptr, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// The CUDA 11.3 entry point, without the status, as older static runtimes look it up.
TEST(ProcAddress, TheLegacyEntryPointResolvesAlike) {
  const auto legacy =
      reinterpret_cast<PFN_cuGetProcAddress_v11030>(driver_symbol("cuGetProcAddress"));
  ASSERT_NE(legacy, nullptr);
  void* function = nullptr;
  ASSERT_EQ(legacy("cuMemAlloc", &function, 11080, CU_GET_PROC_ADDRESS_DEFAULT), CUDA_SUCCESS);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc_v2"));
  EXPECT_EQ(legacy("cuNoSuchFunction", &function, 11080, 0), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(function, nullptr);
}

// A static runtime finds cuInit through cuGetProcAddress before anything is initialised, and
// calls what it found.
TEST(ProcAddress, WorksBeforeCuInitAndHandsOutCallableFunctions) {
  const auto init = reinterpret_cast<PFN_cuInit_v2000>(resolve("cuInit", 13000));
  const auto version =
      reinterpret_cast<PFN_cuDriverGetVersion_v2020>(resolve("cuDriverGetVersion", 13000));
  const auto count =
      reinterpret_cast<PFN_cuDeviceGetCount_v2000>(resolve("cuDeviceGetCount", 13000));
  ASSERT_NE(init, nullptr);
  ASSERT_NE(version, nullptr);
  ASSERT_NE(count, nullptr);
  int driver_version = 0;
  ASSERT_EQ(version(&driver_version), CUDA_SUCCESS);
  EXPECT_EQ(driver_version, 13000);
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  int devices = 0;
  ASSERT_EQ(count(&devices), CUDA_SUCCESS);
  EXPECT_EQ(devices, 1);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "1"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
