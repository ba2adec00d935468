// The CUPTI backend's translation layer, fed callback data and activity records built with the
// real CUPTI headers: what each memory call and record becomes on the wire.
#include <gtest/gtest.h>

#include "cupti_test_data.h"

#include "activity_translation.h"
#include "api_callback_translation.h"
#include "hook_support.h"
#include "nanopb/vramtrace.pb.h"

namespace vramtrace::cupti {
namespace {

using Action = CallbackOutcome::Action;
using testing::ApiCall;
using testing::as_activity;
using testing::memory_record;
using testing::pool_record;

constexpr int32_t kOutOfMemory = 2;  // cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY

void* fake_pointer(uintptr_t value) {
  return reinterpret_cast<void*>(value);
}

TEST(CuptiCallbackTranslation, CudaMallocIsRecordedOnExitWithItsAddressAndCorrelationId) {
  void* out = nullptr;
  ApiCall<cudaMalloc_v3020_params> call({&out, 1 << 20}, 77);
  EXPECT_EQ(translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, call.enter())
                .action,
            Action::kNone);
  out = fake_pointer(0x7f0000200000);  // what the real cudaMalloc wrote
  const CallbackOutcome o = translate_callback(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, call.exit(0));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_DEVICE);
  EXPECT_EQ(o.alloc.api, vramtrace_wire_Api_API_CUDA_MALLOC);
  EXPECT_EQ(o.alloc.address, 0x7f0000200000u);
  EXPECT_EQ(o.alloc.size, 1u << 20);
  EXPECT_EQ(o.alloc.requested_size, 1u << 20);
  EXPECT_EQ(o.alloc.result, 0);
  EXPECT_EQ(o.alloc.correlation_id, 77u);
  EXPECT_EQ(o.alloc.device, preload::kAskDevice);
}

TEST(CuptiCallbackTranslation, FailedAllocationKeepsItsResultAndNoAddress) {
  void* out = fake_pointer(0xdead);  // garbage the program left there: not an address
  ApiCall<cudaMalloc_v3020_params> call({&out, 1ull << 40}, 5);
  const CallbackOutcome o =
      translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                         call.exit(kOutOfMemory));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.result, kOutOfMemory);
  EXPECT_EQ(o.alloc.address, 0u);
  EXPECT_EQ(o.alloc.size, 1ull << 40);
}

TEST(CuptiCallbackTranslation, FreeIsRecordedOnEntryAndItsFailureOnExit) {
  ApiCall<cudaFree_v3020_params> call({fake_pointer(0x7f0000200000)}, 78);
  const CallbackOutcome entry = translate_callback(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, call.enter());
  ASSERT_EQ(entry.action, Action::kRecordFree);
  EXPECT_EQ(entry.free.api, vramtrace_wire_Api_API_CUDA_FREE);
  EXPECT_EQ(entry.free.address, 0x7f0000200000u);
  EXPECT_EQ(entry.free.correlation_id, 78u);

  EXPECT_EQ(translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                               call.exit(0))
                .action,
            Action::kNone);
  const CallbackOutcome failed = translate_callback(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, call.exit(1));
  ASSERT_EQ(failed.action, Action::kFreeFailed);
  EXPECT_EQ(failed.free_result, 1);
}

TEST(CuptiCallbackTranslation, FreeOfNullIsNotAnEvent) {
  ApiCall<cudaFree_v3020_params> call({nullptr}, 1);
  EXPECT_EQ(translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                               call.enter())
                .action,
            Action::kNone);
}

TEST(CuptiCallbackTranslation, AsyncAllocationsKeepStreamAndPool) {
  void* out = fake_pointer(0x7f0000400000);
  auto stream = static_cast<cudaStream_t>(fake_pointer(0x5000));
  auto pool = static_cast<cudaMemPool_t>(fake_pointer(0x6000));
  ApiCall<cudaMallocAsync_ptsz_v11020_params> async({&out, 4096, stream}, 9);
  CallbackOutcome o =
      translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, async.exit(0));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_ASYNC);
  EXPECT_EQ(o.alloc.api, vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC);
  EXPECT_EQ(o.alloc.stream, 0x5000u);
  EXPECT_EQ(o.alloc.address, 0x7f0000400000u);

  ApiCall<cudaMallocFromPoolAsync_v11020_params> from_pool({&out, 8192, pool, stream}, 10);
  o = translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
                         from_pool.exit(0));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.api, vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC);
  EXPECT_EQ(o.alloc.pool, 0x6000u);
  EXPECT_EQ(o.alloc.size, 8192u);

  ApiCall<cudaFreeAsync_v11020_params> free({out, stream}, 11);
  o = translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                         free.enter());
  ASSERT_EQ(o.action, Action::kRecordFree);
  EXPECT_EQ(o.free.api, vramtrace_wire_Api_API_CUDA_FREE_ASYNC);
  EXPECT_EQ(o.free.stream, 0x5000u);
}

TEST(CuptiCallbackTranslation, PitchedAllocationReservesPitchTimesHeight) {
  void* out = fake_pointer(0x7f0000600000);
  size_t pitch = 512;
  ApiCall<cudaMallocPitch_v3020_params> call({&out, &pitch, 500, 10}, 12);
  const CallbackOutcome o = translate_callback(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, call.exit(0));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.size, 5120u);
  EXPECT_EQ(o.alloc.requested_size, 5000u);
}

TEST(CuptiCallbackTranslation, ManagedAndPinnedKeepTheirFlags) {
  void* out = fake_pointer(0x7f0000800000);
  ApiCall<cudaMallocManaged_v6000_params> managed({&out, 64, 2}, 13);
  CallbackOutcome o =
      translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, managed.exit(0));
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_MANAGED);
  EXPECT_EQ(o.alloc.flags, 2u);
  ApiCall<cudaHostAlloc_v3020_params> pinned({&out, 64, 4}, 14);
  o = translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
                         pinned.exit(0));
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_HOST_PINNED);
  EXPECT_EQ(o.alloc.api, vramtrace_wire_Api_API_CUDA_HOST_ALLOC);
  EXPECT_EQ(o.alloc.flags, 4u);
}

TEST(CuptiCallbackTranslation, DriverAllocationAndFree) {
  CUdeviceptr out = 0;
  ApiCall<cuMemAlloc_v2_params> alloc({&out, 256}, 20);
  out = 0x7f0000a00000;
  CallbackOutcome o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API,
                                         CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, alloc.exit(0));
  ASSERT_EQ(o.action, Action::kRecordAlloc);
  EXPECT_EQ(o.alloc.api, vramtrace_wire_Api_API_CU_MEM_ALLOC);
  EXPECT_EQ(o.alloc.address, 0x7f0000a00000u);
  ApiCall<cuMemFree_v2_params> free({out}, 21);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
                         free.enter());
  ASSERT_EQ(o.action, Action::kRecordFree);
  EXPECT_EQ(o.free.api, vramtrace_wire_Api_API_CU_MEM_FREE);
  EXPECT_EQ(o.free.address, 0x7f0000a00000u);
}

TEST(CuptiCallbackTranslation, VirtualMemoryReserveCreateMapUnmapReleaseFree) {
  CUdeviceptr va = 0x7f1000000000;
  ApiCall<cuMemAddressReserve_params> reserve({&va, 1 << 22, 0, 0, 0}, 30);
  CallbackOutcome o = translate_callback(
      CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, reserve.exit(0));
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_VMM_RESERVATION);
  EXPECT_EQ(o.alloc.address, 0x7f1000000000u);
  EXPECT_EQ(o.alloc.size, 1u << 22);

  CUmemGenericAllocationHandle handle = 0xabc0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 3;
  ApiCall<cuMemCreate_params> create({&handle, 1 << 21, &prop, 0}, 31);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
                         create.exit(0));
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_VMM_HANDLE);
  EXPECT_EQ(o.alloc.address, 0xabc0u);  // a handle's value stands for its address
  EXPECT_EQ(o.alloc.device, 3);         // the properties' device, not the context's

  ApiCall<cuMemMap_params> map({va, 1 << 21, 4096, handle, 0}, 32);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, map.exit(0));
  EXPECT_EQ(o.alloc.kind, vramtrace_wire_Kind_KIND_VMM_MAPPING);
  EXPECT_EQ(o.alloc.vmm_handle, 0xabc0u);
  EXPECT_EQ(o.alloc.vmm_offset, 4096u);

  ApiCall<cuMemUnmap_params> unmap({va, 1 << 21}, 33);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                         unmap.enter());
  ASSERT_EQ(o.action, Action::kRecordFree);
  EXPECT_EQ(o.free.api, vramtrace_wire_Api_API_CU_MEM_UNMAP);
  EXPECT_EQ(o.free.size, 1u << 21);

  ApiCall<cuMemRelease_params> release({handle}, 34);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
                         release.enter());
  EXPECT_EQ(o.free.api, vramtrace_wire_Api_API_CU_MEM_RELEASE);
  EXPECT_EQ(o.free.address, 0xabc0u);

  ApiCall<cuMemAddressFree_params> address_free({va, 1 << 22}, 35);
  o = translate_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
                         address_free.enter());
  EXPECT_EQ(o.free.api, vramtrace_wire_Api_API_CU_MEM_ADDRESS_FREE);
  EXPECT_EQ(o.free.size, 1u << 22);
}

TEST(CuptiCallbackTranslation, OtherFunctionsAreNotEvents) {
  cudaMemPoolCreate_v11020_params params{};
  ApiCall<cudaMemPoolCreate_v11020_params> call(params, 40);
  EXPECT_EQ(translate_callback(CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020, call.exit(0))
                .action,
            Action::kNone);
  EXPECT_EQ(translate_callback(CUPTI_CB_DOMAIN_NVTX, 1, call.exit(0)).action, Action::kNone);
}

// Every callback the injection enables must mean something: an allocation on exit, or a free
// on entry. A parameter struct of zeros with a non-null first pointer is enough for each.
TEST(CuptiCallbackTranslation, EveryEnabledCallbackTranslates) {
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    ASSERT_FALSE(memory_callback_ids(domain).empty());
    for (CUpti_CallbackId cbid : memory_callback_ids(domain)) {
      uint64_t slot[8] = {0x1000};  // big enough for what an output pointer points at
      struct {
        void* first;
        uint64_t rest[7];
      } params{fake_pointer(0x1000), {}};
      // Pointer-to-output parameters point at a real slot; value parameters read 0x1000.
      params.first = slot;
      CUpti_CallbackData data{};
      data.functionParams = &params;
      data.correlationId = 1;
      int32_t ok = 0;
      data.functionReturnValue = &ok;
      data.callbackSite = CUPTI_API_EXIT;
      const Action at_exit = translate_callback(domain, cbid, data).action;
      data.callbackSite = CUPTI_API_ENTER;
      const Action at_entry = translate_callback(domain, cbid, data).action;
      EXPECT_TRUE(at_exit == Action::kRecordAlloc || at_entry == Action::kRecordFree)
          << "domain " << domain << " cbid " << cbid;
    }
  }
}

TEST(CuptiActivityTranslation, Memory2AllocationAndRelease) {
  auto r = memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 77, 0x7f0000200000, 1 << 20);
  r.deviceId = 2;
  auto e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->operation, vramtrace_wire_MemoryActivity_Operation_OPERATION_ALLOCATION);
  EXPECT_EQ(e->kind, vramtrace_wire_Kind_KIND_DEVICE);
  EXPECT_EQ(e->correlation_id, 77u);
  EXPECT_EQ(e->address, 0x7f0000200000u);
  EXPECT_EQ(e->size, 1u << 20);
  EXPECT_EQ(e->device, 2);
  EXPECT_EQ(e->stream, 0u);  // CUPTI_INVALID_STREAM_ID: not async
  EXPECT_EQ(e->timestamp_ns, 1'000'077u);
  EXPECT_EQ(e->pool_address, 0u);

  r.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->operation, vramtrace_wire_MemoryActivity_Operation_OPERATION_RELEASE);
}

TEST(CuptiActivityTranslation, AsyncAllocationNamesItsPool) {
  auto r = memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 9, 0x7f0000400000, 4096);
  r.isAsync = 1;
  r.streamId = 7;
  r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  r.memoryPoolConfig.address = 0x7f0000000000;
  r.memoryPoolConfig.releaseThreshold = 1 << 30;
  r.memoryPoolConfig.utilizedSize = 8192;
  const auto e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, vramtrace_wire_Kind_KIND_ASYNC);
  EXPECT_EQ(e->stream, 7u);
  EXPECT_EQ(e->pool_address, 0x7f0000000000u);
  EXPECT_EQ(e->release_threshold, 1u << 30);
  EXPECT_EQ(e->utilized_size, 8192u);
}

TEST(CuptiActivityTranslation, MemoryKinds) {
  EXPECT_EQ(wire_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, false), vramtrace_wire_Kind_KIND_MANAGED);
  EXPECT_EQ(wire_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false),
            vramtrace_wire_Kind_KIND_HOST_PINNED);
  EXPECT_EQ(wire_kind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, false),
            vramtrace_wire_Kind_KIND_UNKNOWN);
}

TEST(CuptiActivityTranslation, SourceIsReadOnlyFromACuptiThatWritesIt) {
  auto r = memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 0x1000, 16);
  r.source = "libtorch_cuda.so";
  EXPECT_STREQ(translate_activity(as_activity(r), 130001)->source, "libtorch_cuda.so");
  // CUPTI 12.x hands out CUpti_ActivityMemory3, which ends before `source`.
  EXPECT_EQ(translate_activity(as_activity(r), 28)->source, nullptr);
}

TEST(CuptiActivityTranslation, PoolCreatedTrimmedDestroyed) {
  auto r =
      pool_record(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 50, 0x7f2000000000, 1 << 21);
  auto e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->operation, vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_CREATED);
  EXPECT_EQ(e->kind, vramtrace_wire_Kind_KIND_ASYNC);
  EXPECT_EQ(e->address, 0x7f2000000000u);
  EXPECT_EQ(e->pool_address, 0x7f2000000000u);
  EXPECT_EQ(e->size, 1u << 21);
  EXPECT_EQ(e->device, 1);
  EXPECT_EQ(e->release_threshold, 1u << 20);
  EXPECT_EQ(e->utilized_size, 4096u);
  EXPECT_EQ(e->min_bytes_to_keep, 0u);

  r.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  r.minBytesToKeep = 65536;
  e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->operation, vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_TRIMMED);
  EXPECT_EQ(e->min_bytes_to_keep, 65536u);

  r.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED;
  e = translate_activity(as_activity(r), 130001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->operation, vramtrace_wire_MemoryActivity_Operation_OPERATION_POOL_DESTROYED);
}

TEST(CuptiActivityTranslation, OtherRecordsAreNotMemoryEvents) {
  auto r = memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID,
                         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 0x1000, 16);
  EXPECT_FALSE(translate_activity(as_activity(r), 130001));
  r.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  EXPECT_FALSE(translate_activity(as_activity(r), 130001));
}

}  // namespace
}  // namespace vramtrace::cupti
