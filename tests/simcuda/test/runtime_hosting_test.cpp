// What the simulated runtime offers beyond allocation, for libraries built with nvcc such as
// PyTorch's: device properties read from the driver, events, stream priorities and capture
// queries, host functions, asynchronous copies, host registration and pointer attributes, the
// registration and launch sequence of nvcc's generated code, and the calls it refuses. And
// the simulated NVML, which describes the same devices. Runs on two 64 MiB devices.

#include <cuda.h>
#include <cuda_kernel_registration.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvml.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "machine_main.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Stand-ins for a module's kernel and __device__ variable, registered as nvcc's code does.
void fake_kernel_stub() {}
void unregistered_stub() {}
int fake_device_variable = 0;

void register_fake_module() {
  static bool registered = [] {
    void** module = __cudaRegisterFatBinary(nullptr);
    __cudaRegisterFunction(module, reinterpret_cast<const char*>(&fake_kernel_stub),
                           const_cast<char*>("fake_kernel"), "fake_kernel", -1, nullptr, nullptr,
                           nullptr, nullptr, nullptr);
    __cudaRegisterVar(module, reinterpret_cast<char*>(&fake_device_variable),
                      const_cast<char*>("fake_variable"), "fake_variable", 0, 64, 0, 0);
    __cudaRegisterFatBinaryEnd(module);
    return true;
  }();
  static_cast<void>(registered);
}

TEST(DeviceProperties, AreTheDriversAttributes) {
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 1), cudaSuccess);
  char name[256] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
  EXPECT_STREQ(prop.name, name);
  std::size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
  EXPECT_EQ(prop.totalGlobalMem, total);
  EXPECT_EQ(prop.totalGlobalMem, 64 * kMiB);
  CUuuid uuid{};
  ASSERT_EQ(cuDeviceGetUuid(&uuid, 1), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&prop.uuid, &uuid, sizeof uuid), 0);
  const std::pair<int, CUdevice_attribute> fields[] = {
      {prop.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {prop.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {prop.multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {prop.warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {prop.maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {prop.maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {prop.maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {prop.pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
      {prop.l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {prop.memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED},
      {prop.hostNumaMultinodeIpcSupported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED},
  };
  for (const auto& [value, attribute] : fields) {
    int expected = -1;
    ASSERT_EQ(cuDeviceGetAttribute(&expected, attribute, 1), CUDA_SUCCESS) << attribute;
    EXPECT_EQ(value, expected) << "attribute " << attribute;
  }
  int shared = 0;
  ASSERT_EQ(cuDeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(prop.sharedMemPerBlock, static_cast<std::size_t>(shared));
  EXPECT_GT(prop.multiProcessorCount, 0);
}

TEST(DeviceProperties, AttributeAndBadDevices) {
  int value = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, 0), cudaSuccess);
  EXPECT_EQ(value, 32);
  cudaDeviceProp prop{};
  EXPECT_EQ(cudaGetDeviceProperties(&prop, 2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, -1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(100000), 0),
            cudaErrorInvalidValue);
  cudaGetLastError();
  char bus[32] = {};
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaSuccess);
  CUdevice device = -1;
  ASSERT_EQ(cuDeviceGetByPCIBusId(&device, bus), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  int peer = 0;
  EXPECT_EQ(cudaDeviceCanAccessPeer(&peer, 0, 1), cudaSuccess);
  EXPECT_EQ(peer, 1);
}

TEST(Events, RecordedEventsAreCompleteAndTimed) {
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&end, cudaEventBlockingSync), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start, nullptr), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(cudaEventRecordWithFlags(end, nullptr, 0), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(end), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 19.0F);
  EXPECT_LT(ms, 5000.0F);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(stream, end, 0), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(end), cudaSuccess);
}

TEST(Events, WithoutTimingHaveNoElapsedTime) {
  cudaEvent_t untimed = nullptr;
  cudaEvent_t timed = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&timed), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(timed, nullptr), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, untimed, timed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  // Interprocess events must not time.
  cudaEvent_t shared = nullptr;
  EXPECT_EQ(cudaEventCreateWithFlags(&shared, cudaEventInterprocess), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaEventDestroy(untimed);
  cudaEventDestroy(timed);
}

TEST(Streams, PrioritiesComeFromTheDriversRange) {
  int least = 1;
  int greatest = 1;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_EQ(least, 0);
  EXPECT_LT(greatest, least);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest), cudaSuccess);
  int priority = 1;
  EXPECT_EQ(cudaStreamGetPriority(stream, &priority), cudaSuccess);
  EXPECT_EQ(priority, greatest);
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Capture through the runtime is the driver's (its own tests: driver_capture_test.cpp): what
// the runtime adds is the translation of statuses and errors, and the capture id.
TEST(Streams, CaptureThroughTheRuntime) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  unsigned long long id = 0;
  EXPECT_EQ(cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, nullptr, nullptr, nullptr),
            cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(cudaStreamUpdateCaptureDependencies(stream, nullptr, nullptr, 0, 0), cudaSuccess);
  // PyTorch's allocator allocates during a capture in the relaxed mode, which allows it.
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&relaxed), cudaSuccess);
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 512), cudaSuccess);
  EXPECT_EQ(cudaFree(scratch), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&relaxed), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaErrorIllegalState) << "nothing began";
  cudaGetLastError();
  EXPECT_EQ(cudaStreamUpdateCaptureDependencies(stream, nullptr, nullptr, 0, 0),
            cudaErrorIllegalState);
  cudaGetLastError();
  // A stream that does not exist is the driver's error, as for any stream call.
  EXPECT_EQ(cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(0x1234), &status),
            cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeRelaxed);
  cudaStreamDestroy(stream);
}

TEST(Streams, HostFunctionsAndCallbacksRunAtOnce) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  int calls = 0;
  ASSERT_EQ(cudaLaunchHostFunc(
                stream, [](void* data) { ++*static_cast<int*>(data); }, &calls),
            cudaSuccess);
  EXPECT_EQ(calls, 1);
  struct Seen {
    cudaStream_t stream;
    cudaError_t status;
  } seen{nullptr, cudaErrorUnknown};
  ASSERT_EQ(cudaStreamAddCallback(
                stream,
                [](cudaStream_t s, cudaError_t status, void* data) {
                  *static_cast<Seen*>(data) = {s, status};
                },
                &seen, 0),
            cudaSuccess);
  EXPECT_EQ(seen.stream, stream);
  EXPECT_EQ(seen.status, cudaSuccess);
  EXPECT_EQ(cudaStreamAddCallback(stream, nullptr, nullptr, 0), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaStreamDestroy(stream);
}

TEST(Copies, AsynchronousOnesRoundTrip) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 4096), cudaSuccess);
  std::vector<unsigned char> source(4096);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<unsigned char>(i * 7);
  std::vector<unsigned char> back(4096, 0);
  ASSERT_EQ(cudaMemcpyAsync(device, source.data(), 4096, cudaMemcpyHostToDevice, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(back.data(), device, 4096, cudaMemcpyDeviceToHost, nullptr),
            cudaSuccess);
  EXPECT_EQ(back, source);
  ASSERT_EQ(cudaMemsetAsync(device, 0xab, 100, nullptr), cudaSuccess);
  // A 2D copy of 10 rows of 16 bytes out of rows 64 apart.
  ASSERT_EQ(cudaMemcpy2DAsync(back.data(), 16, device, 64, 16, 10, cudaMemcpyDeviceToHost, nullptr),
            cudaSuccess);
  EXPECT_EQ(back[0], 0xab);
  EXPECT_EQ(back[16 + 15], 0xab);              // row 1: device bytes 64 to 80, all set
  EXPECT_EQ(back[32 + 4], source[128 + 4]);    // row 2: bytes 128 to 144, ...
  EXPECT_EQ(back[32 + 15], source[128 + 15]);  // ... past the 100 set bytes
  EXPECT_EQ(cudaMemcpyAsync(device, source.data(), 8192, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaMemcpyAsync(device, source.data(), 16, static_cast<cudaMemcpyKind>(9), nullptr),
            cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();
  void* other = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&other, 4096), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyPeerAsync(other, 1, device, 0, 4096, nullptr), cudaSuccess);
  std::vector<unsigned char> peer(4096, 0);
  ASSERT_EQ(cudaMemcpy(peer.data(), other, 4096, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(peer[0], 0xab);
  EXPECT_EQ(peer[200], source[200]);
  cudaFree(other);
  cudaFree(device);
}

TEST(Pointers, AttributesOfEachKind) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1024), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 1024), cudaSuccess);
  std::vector<char> pageable(8192);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, device), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  EXPECT_EQ(attributes.devicePointer, device);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pinned), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_EQ(attributes.hostPointer, pinned);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pageable.data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(attributes.devicePointer, nullptr);
  ASSERT_EQ(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault),
            cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pageable.data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_EQ(cudaHostRegister(pageable.data(), pageable.size(), 0),
            cudaErrorHostMemoryAlreadyRegistered);
  cudaGetLastError();
  EXPECT_EQ(cudaHostUnregister(pageable.data()), cudaSuccess);
  EXPECT_EQ(cudaHostUnregister(pageable.data()), cudaErrorHostMemoryNotRegistered);
  cudaGetLastError();
  cudaFreeHost(pinned);
  cudaFree(device);
}

TEST(Kernels, RegisteredFunctionsLaunchWithoutRunning) {
  register_fake_module();
  const void* stub = reinterpret_cast<const void*>(&fake_kernel_stub);
  EXPECT_EQ(cudaLaunchKernel(stub, dim3(4), dim3(256), nullptr, 0, nullptr), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel(stub, dim3(4), dim3(2048), nullptr, 0, nullptr),
            cudaErrorInvalidConfiguration);
  cudaGetLastError();
  EXPECT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&unregistered_stub), dim3(1), dim3(1),
                             nullptr, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  cudaGetLastError();
  // The sequence nvcc generates for kernel<<<grid, block, shared, stream>>>(...).
  EXPECT_EQ(__cudaPushCallConfiguration(dim3(8), dim3(128), 16, nullptr), 0U);
  dim3 grid;
  dim3 block;
  std::size_t shared = 0;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x99);
  ASSERT_EQ(__cudaPopCallConfiguration(&grid, &block, &shared, &stream), cudaSuccess);
  EXPECT_EQ(grid.x, 8U);
  EXPECT_EQ(block.x, 128U);
  EXPECT_EQ(shared, 16U);
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(__cudaPopCallConfiguration(&grid, &block, &shared, &stream),
            cudaErrorMissingConfiguration);
  cudaGetLastError();
  cudaKernel_t kernel = nullptr;
  ASSERT_EQ(__cudaGetKernel(&kernel, stub), cudaSuccess);
  EXPECT_EQ(__cudaLaunchKernel(kernel, grid, block, nullptr, shared, stream), cudaSuccess);
  cudaFuncAttributes attributes{};
  ASSERT_EQ(cudaFuncGetAttributes(&attributes, stub), cudaSuccess);
  EXPECT_EQ(attributes.maxThreadsPerBlock, 1024);
  int blocks = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, stub, 256, 0), cudaSuccess);
  EXPECT_EQ(blocks, 8);
}

TEST(Kernels, ModuleVariablesAreHostMemory) {
  register_fake_module();
  void* address = nullptr;
  ASSERT_EQ(cudaGetSymbolAddress(&address, &fake_device_variable), cudaSuccess);
  ASSERT_NE(address, nullptr);
  EXPECT_NE(address, &fake_device_variable);
  const int value = 42;
  ASSERT_EQ(cudaMemcpyToSymbol(&fake_device_variable, &value, sizeof value, 8), cudaSuccess);
  int read = 0;
  std::memcpy(&read, static_cast<char*>(address) + 8, sizeof read);
  EXPECT_EQ(read, 42);
  EXPECT_EQ(cudaMemcpyToSymbol(&fake_device_variable, &value, sizeof value, 62),
            cudaErrorInvalidValue);
  cudaGetLastError();
  int not_a_symbol = 0;
  EXPECT_EQ(cudaGetSymbolAddress(&address, &not_a_symbol), cudaErrorInvalidSymbol);
  cudaGetLastError();
}

TEST(Unsupported, GraphsByNodeLibrariesAndIpcSayNotSupported) {
  cudaGraphNode_t node = nullptr;
  EXPECT_EQ(cudaGraphAddNode(&node, nullptr, nullptr, nullptr, 0, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(node, nullptr);
  cudaLibrary_t library = nullptr;
  EXPECT_EQ(
      cudaLibraryLoadFromFile(&library, "kernels.cubin", nullptr, nullptr, 0, nullptr, nullptr, 0),
      cudaErrorNotSupported);
  EXPECT_EQ(library, nullptr);
  cudaIpcMemHandle_t handle{};
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 512), cudaSuccess);
  EXPECT_EQ(cudaIpcGetMemHandle(&handle, device), cudaErrorNotSupported);
  cudaGetLastError();
  cudaFree(device);
  EXPECT_EQ(cudaProfilerStart(), cudaSuccess);
  EXPECT_EQ(cudaProfilerStop(), cudaSuccess);
}

TEST(Nvml, DescribesTheDriversDevices) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2U);
  for (unsigned int index = 0; index < count; ++index) {
    nvmlDevice_t device = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS);
    // The PCI bus id PyTorch formats from the runtime's properties finds the same device.
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, static_cast<int>(index)), cudaSuccess);
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    std::snprintf(bus_id, sizeof bus_id, "%08X:%02X:%02X.0", prop.pciDomainID, prop.pciBusID,
                  prop.pciDeviceID);
    nvmlDevice_t by_bus = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(bus_id, &by_bus), NVML_SUCCESS) << bus_id;
    EXPECT_EQ(by_bus, device);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    ASSERT_EQ(nvmlDeviceGetUUID(device, uuid, sizeof uuid), NVML_SUCCESS);
    char expected[64];
    const auto* bytes = reinterpret_cast<const unsigned char*>(&prop.uuid);
    std::snprintf(expected, sizeof expected,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                  bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                  bytes[15]);
    EXPECT_STREQ(uuid, expected);
    nvmlDevice_t by_uuid = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByUUID(uuid, &by_uuid), NVML_SUCCESS);
    EXPECT_EQ(by_uuid, device);
    nvmlGpuFabricInfoV_t fabric{};
    fabric.state = NVML_GPU_FABRIC_STATE_COMPLETED;
    ASSERT_EQ(nvmlDeviceGetGpuFabricInfoV(device, &fabric), NVML_SUCCESS);
    EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
    unsigned int processes = 5;
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses(device, &processes, nullptr), NVML_SUCCESS);
    EXPECT_EQ(processes, 0U);
  }
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:7F:00.0", &none), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("not a bus", &none), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(2, &none), NVML_ERROR_INVALID_ARGUMENT);
  int version = 0;
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion_v2(&version), NVML_SUCCESS);
  EXPECT_EQ(version, 13000);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
