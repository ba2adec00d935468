// The CUDA driver's virtual memory API used the way PyTorch's expandable segments use it
// (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): reserve a large address range once,
// grow a segment by creating physical handles and mapping them at the end of what is mapped,
// and shrink it (empty_cache) by unmapping and releasing the tail. Large segments grow in
// 20 MiB pages, small ones in 2 MiB pages.
//
// What it leaves behind, for the tests and for samples/gpu/check.sh:
//   one 256 MiB reservation; 2 large pages (40 MiB) and 2 small pages (4 MiB) mapped, with
//   their 4 handles (44 MiB of physical memory).
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kReserved = 256 * kMiB;
constexpr size_t kLargePage = 20 * kMiB;
constexpr size_t kSmallPage = 2 * kMiB;
constexpr size_t kSmallRegion = 128 * kMiB;  // where the small segment starts in the range

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "expandable_segments: %s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

struct Page {
  CUdeviceptr address;
  size_t size;
  CUmemGenericAllocationHandle handle;
};

class Segment {
 public:
  Segment(CUdeviceptr base, size_t page, int device) : base_(base), page_(page), device_(device) {}

  // Maps one more page at the end of the segment.
  __attribute__((noinline)) void grow() {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    Page p{base_ + pages_.size() * page_, page_, 0};
    check(cuMemCreate(&p.handle, page_, &prop, 0), "cuMemCreate");
    check(cuMemMap(p.address, page_, 0, p.handle, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(cuMemSetAccess(p.address, page_, &access, 1), "cuMemSetAccess");
    pages_.push_back(p);
  }

  // Unmaps the last `count` pages with one cuMemUnmap, as empty_cache does, and releases
  // their handles.
  __attribute__((noinline)) void shrink(size_t count) {
    const size_t first = pages_.size() - count;
    check(cuMemUnmap(pages_[first].address, count * page_), "cuMemUnmap");
    for (size_t i = first; i < pages_.size(); ++i)
      check(cuMemRelease(pages_[i].handle), "cuMemRelease");
    pages_.resize(first);
  }

 private:
  CUdeviceptr base_;
  size_t page_;
  int device_;
  std::vector<Page> pages_;
};

}  // namespace

int main() {
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  if (kSmallPage % granularity != 0) {
    std::fprintf(stderr, "expandable_segments: granularity %zu does not divide 2 MiB\n",
                 granularity);
    return 1;
  }

  size_t free_before = 0, total_bytes = 0;
  check(cuMemGetInfo(&free_before, &total_bytes), "cuMemGetInfo");

  CUdeviceptr base = 0;
  check(cuMemAddressReserve(&base, kReserved, 0, 0, 0), "cuMemAddressReserve");  // left behind
  Segment large(base, kLargePage, device);
  Segment small(base + kSmallRegion, kSmallPage, device);
  for (int i = 0; i < 3; ++i) large.grow();
  for (int i = 0; i < 4; ++i) small.grow();
  large.shrink(1);  // 2 large pages stay mapped
  small.shrink(2);  // 2 small pages stay mapped

  size_t free_after = 0;
  check(cuMemGetInfo(&free_after, &total_bytes), "cuMemGetInfo");
  // The driver's view, for samples/gpu/check.sh to compare with the trace.
  std::printf(
      "expandable_segments: 44 MiB mapped of a 256 MiB reservation; "
      "driver_device_bytes_used_delta=%lld total=%zu\n",
      static_cast<long long>(free_before) - static_cast<long long>(free_after), total_bytes);
  return 0;
}
