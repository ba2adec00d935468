// From CUPTI's callback data and activity records to trace rows: the CUPTI backend's translation
// layer, the shim's wire encoder (nanopb, as inside the target) and the collector's TraceIngest,
// with the rings left out (ingest_harness.h).
#include <gtest/gtest.h>

#include "cupti_test_data.h"

#include "activity_translation.h"
#include "api_callback_translation.h"
#include "hook_support.h"
#include "ingest_harness.h"
#include "sql_query.h"
#include "wire_encoder.h"

namespace vramtrace::cupti {
namespace {

using Action = CallbackOutcome::Action;
using testing::ApiCall;
using testing::as_activity;
using testing::query_one;
using testing_support::IngestHarness;

// What the injection does with one callback's outcome, through the real encoder; the device the
// injection would ask the context for is 0 here.
class CuptiFeed {
 public:
  explicit CuptiFeed(IngestHarness& harness) : harness_(harness) {}

  void callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& d) {
    CallbackOutcome o = translate_callback(domain, cbid, d);
    uint8_t buf[preload::kMaxEventBytes];
    const preload::Stack no_stack{nullptr, 0, false};
    switch (o.action) {
      case Action::kNone:
        return;
      case Action::kRecordAlloc:
        if (o.alloc.device == preload::kAskDevice) o.alloc.device = 0;
        o.alloc.tid = 99;
        feed(buf, preload::encode_alloc(o.alloc, no_stack, buf, sizeof buf));
        return;
      case Action::kRecordFree:
        o.free.tid = 99;
        feed(buf, preload::encode_free(o.free, no_stack, buf, sizeof buf));
        last_free_seq_ = harness_.seq();
        return;
      case Action::kFreeFailed:
        feed(buf, preload::encode_free_failed(last_free_seq_, o.free_result, preload::Stack{}, buf,
                                              sizeof buf));
        return;
    }
  }
  template <class Record>
  void activity(const Record& r) {
    auto e = translate_activity(as_activity(r), 130001);
    ASSERT_TRUE(e);
    uint8_t buf[preload::kMaxEventBytes];
    feed(buf, preload::encode_memory_activity(*e, buf, sizeof buf));
  }

 private:
  void feed(const uint8_t* bytes, size_t size) {
    ASSERT_GT(size, 0u);
    wire::Envelope envelope;
    ASSERT_TRUE(envelope.ParseFromArray(bytes, static_cast<int>(size)));
    harness_.feed(envelope);
  }
  IngestHarness& harness_;
  uint64_t last_free_seq_ = 0;
};

void* fake_pointer(uintptr_t value) {
  return reinterpret_cast<void*>(value);
}

std::string sql(const IngestHarness& h, const std::string& query) {
  return query_one(h.path(), query);
}

TEST(CuptiIngest, AllocationAndFreeBecomeOneRowWithTheCorrelationIdOfTheCall) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  void* out = fake_pointer(0x7f0000200000);
  ApiCall<cudaMalloc_v3020_params> alloc({&out, 1 << 20}, 77);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                alloc.enter());
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                alloc.exit(0));
  ApiCall<cudaFree_v3020_params> free({out}, 78);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, free.enter());
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, free.exit(0));
  h.finish();

  EXPECT_EQ(sql(h, "SELECT backend FROM process"), "cupti");
  EXPECT_EQ(sql(h, "SELECT COUNT(*) FROM allocation"), "1");
  EXPECT_EQ(sql(h,
                "SELECT kind_name || ' ' || api_name || ' ' || size || ' ' || correlation_id "
                "|| ' ' || free_api_name FROM allocation_view"),
            "device cudaMalloc 1048576 77 cudaFree");
  EXPECT_EQ(sql(h, "SELECT COUNT(*) FROM bad_free"), "0");
}

TEST(CuptiIngest, FailedAllocationIsARowThatHoldsNothing) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  void* out = nullptr;
  ApiCall<cudaMalloc_v3020_params> alloc({&out, 1ull << 40}, 5);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                alloc.exit(2));
  h.finish();
  EXPECT_EQ(sql(h, "SELECT result || ' ' || address || ' ' || size FROM allocation"),
            "2 0 1099511627776");
}

TEST(CuptiIngest, AFreeThatFailsLeavesTheAllocationLive) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  CUdeviceptr out = 0x7f0000a00000;
  ApiCall<cuMemAlloc_v2_params> alloc({&out, 256}, 20);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, alloc.exit(0));
  ApiCall<cuMemFree_v2_params> free({out}, 21);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, free.enter());
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, free.exit(1));
  h.finish();
  EXPECT_EQ(sql(h, "SELECT free_seq FROM allocation"), "<null>");
}

TEST(CuptiIngest, AsyncAllocationAndFreeMatchTheirActivityRecordsByCorrelationId) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  void* out = fake_pointer(0x7f0000400000);
  auto stream = static_cast<cudaStream_t>(fake_pointer(0x5000));
  ApiCall<cudaMallocAsync_v11020_params> alloc({&out, 4096, stream}, 9);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
                alloc.exit(0));
  ApiCall<cudaFreeAsync_v11020_params> free({out, stream}, 10);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                free.enter());
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                free.exit(0));
  // CUPTI delivers the records later, in a batch.
  auto made = testing::memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                     CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 9, 0x7f0000400000, 4096);
  made.isAsync = 1;
  made.streamId = 3;
  made.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  made.memoryPoolConfig.address = 0x7f0000000000;
  auto released = made;
  released.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  released.correlationId = 10;
  feed.activity(made);
  feed.activity(released);
  h.finish();

  EXPECT_EQ(sql(h,
                "SELECT kind_name || ' ' || stream || ' ' || correlation_id || ' ' || "
                "(free_seq IS NOT NULL) FROM allocation_view"),
            "async 20480 9 1");
  EXPECT_EQ(sql(h,
                "SELECT group_concat(operation || ':' || kind || ':' || stream || ':' || "
                "pool_address || ':' || (allocation_id = (SELECT id FROM allocation)), ' ') "
                "FROM (SELECT * FROM memory_activity ORDER BY id)"),
            "allocation:4:3:139637976727552:1 release:4:3:139637976727552:1");
  EXPECT_EQ(h.stat("cupti_activity_allocation_without_callback"), 0);
}

// Should CUPTI stamp a runtime call's memory record with the id of the driver call inside it
// (which the backend leaves out), the record still finds its allocation, by address.
TEST(CuptiIngest, ActivityWithAnotherCorrelationIdMatchesByAddress) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  void* out = fake_pointer(0x7f0000200000);
  ApiCall<cudaMalloc_v3020_params> first({&out, 4096}, 40);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                first.exit(0));
  ApiCall<cudaFree_v3020_params> free({out}, 41);
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, free.enter());
  ApiCall<cudaMalloc_v3020_params> again({&out, 4096}, 42);  // the address, reused
  feed.callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                again.exit(0));
  feed.activity(testing::memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 40, 0x7f0000200000,
                                       4096));
  feed.activity(testing::memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 9042, 0x7f0000200000,
                                       4096));
  h.finish();
  EXPECT_EQ(sql(h,
                "SELECT group_concat(allocation_id, ' ') FROM (SELECT allocation_id FROM "
                "memory_activity ORDER BY id)"),
            "1 2");
  EXPECT_EQ(h.stat("cupti_activity_matched_by_address"), 1);
  EXPECT_EQ(h.stat("cupti_activity_allocation_without_callback"), 0);
}

TEST(CuptiIngest, ActivityNoCallbackSawIsKeptAndCounted) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  feed.activity(testing::memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                       CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 123, 0x7f3000000000,
                                       65536));
  h.finish();
  EXPECT_EQ(sql(h,
                "SELECT operation || ' ' || kind || ' ' || size || ' ' || "
                "IFNULL(allocation_id, 'none') FROM memory_activity"),
            "allocation 2 65536 none");
  EXPECT_EQ(h.stat("cupti_activity_allocation_without_callback"), 1);
}

TEST(CuptiIngest, PoolCreateTrimDestroyBecomeActivityRows) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  auto r = testing::pool_record(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 50,
                                0x7f2000000000, 1 << 21);
  feed.activity(r);
  r.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  r.correlationId = 51;
  r.minBytesToKeep = 65536;
  feed.activity(r);
  r.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED;
  r.correlationId = 52;
  r.minBytesToKeep = 0;
  feed.activity(r);
  h.finish();
  EXPECT_EQ(sql(h,
                "SELECT group_concat(operation || ':' || correlation_id || ':' || size || ':' "
                "|| release_threshold || ':' || IFNULL(min_bytes_to_keep, '-'), ' ') "
                "FROM (SELECT * FROM memory_activity ORDER BY id)"),
            "pool_created:50:2097152:1048576:- pool_trimmed:51:2097152:1048576:65536 "
            "pool_destroyed:52:2097152:1048576:-");
  EXPECT_EQ(sql(h, "SELECT COUNT(*) FROM allocation"), "0");
}

TEST(CuptiIngest, VirtualMemoryLifecycleEndsEveryLayer) {
  IngestHarness h(wire::BACKEND_CUPTI);
  CuptiFeed feed(h);
  CUdeviceptr va = 0x7f1000000000;
  ApiCall<cuMemAddressReserve_params> reserve({&va, 1 << 22, 0, 0, 0}, 30);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve,
                reserve.exit(0));
  CUmemGenericAllocationHandle handle = 0xabc0;
  CUmemAllocationProp prop{};
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  ApiCall<cuMemCreate_params> create({&handle, 1 << 21, &prop, 0}, 31);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, create.exit(0));
  ApiCall<cuMemMap_params> map({va, 1 << 21, 0, handle, 0}, 32);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, map.exit(0));
  ApiCall<cuMemUnmap_params> unmap({va, 1 << 21}, 33);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, unmap.enter());
  ApiCall<cuMemRelease_params> release({handle}, 34);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, release.enter());
  ApiCall<cuMemAddressFree_params> address_free({va, 1 << 22}, 35);
  feed.callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
                address_free.enter());
  h.finish();
  EXPECT_EQ(
      sql(h,
          "SELECT group_concat(kind_name || ':' || device || ':' || free_api_name, ' ') "
          "FROM (SELECT * FROM allocation_view ORDER BY id)"),
      "vmm_reservation:0:cuMemAddressFree vmm_handle:1:cuMemRelease vmm_mapping:0:cuMemUnmap");
  EXPECT_EQ(sql(h, "SELECT COUNT(*) FROM bad_free"), "0");
}

TEST(CuptiIngest, TheShimsProcessesSayPreload) {
  IngestHarness h;
  h.finish();
  EXPECT_EQ(sql(h, "SELECT backend FROM process"), "preload");
  EXPECT_EQ(h.reader().process_backends().at(1), "preload");
}

}  // namespace
}  // namespace vramtrace::cupti
