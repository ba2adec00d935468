// Stream capture and graphs on the simulated driver (src/driver/capture.h): what a capture
// records and a launch does, the capture modes and the calls they forbid, forks and joins
// through events, and the errors of a capture used wrongly. On a machine of one 64 MiB device.

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "driver_test_support.h"
#include "machine_main.h"

namespace {

using simcuda_test::host_pointer;

class Capture : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(context_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&data_, 4096), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD8(data_, 0, 4096), CUDA_SUCCESS);
  }
  void TearDown() override {
    cuMemFree(data_);
    cuStreamDestroy(stream_);
    cuDevicePrimaryCtxRelease(0);
  }

  unsigned char byte_at(std::size_t offset) const {
    return static_cast<const unsigned char*>(host_pointer(data_))[offset];
  }

  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr data_ = 0;
};

TEST_F(Capture, CapturedWorkIsDoneAtEachLaunchNotWhenCaptured) {
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  EXPECT_EQ(cuStreamIsCapturing(stream_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(cuMemsetD8Async(data_, 7, 16, stream_), CUDA_SUCCESS);
  static int calls = 0;
  calls = 0;
  EXPECT_EQ(cuLaunchHostFunc(
                stream_, [](void*) { ++calls; }, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(byte_at(0), 0) << "captured, not done";
  EXPECT_EQ(calls, 0);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cuStreamIsCapturing(stream_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);

  std::size_t count = 0;
  EXPECT_EQ(cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);
  std::vector<CUgraphNode> nodes(count);
  EXPECT_EQ(cuGraphGetNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  EXPECT_EQ(cuGraphNodeGetType(nodes[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  EXPECT_EQ(cuGraphNodeGetType(nodes[1], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_HOST);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphUpload(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(byte_at(0), 7);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(cuMemsetD8(data_, 0, 16), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(byte_at(15), 7) << "again at each launch";
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Capture, AllocationDuringAGlobalCaptureFailsAndInvalidatesItUnlessRelaxed) {
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  // The relaxed thread mode allows it (PyTorch's allocator switches to it to cudaMalloc).
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  CUdeviceptr more = 0;
  EXPECT_EQ(cuMemAlloc(&more, 512), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(more), CUDA_SUCCESS);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
  // In the global mode it is forbidden, and the capture is spoilt.
  EXPECT_EQ(cuMemAlloc(&more, 512), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  EXPECT_EQ(cuStreamIsCapturing(stream_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(cuMemsetD8Async(data_, 1, 1, stream_), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{1});
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(cuMemAlloc(&more, 512), CUDA_SUCCESS) << "no capture any more";
  EXPECT_EQ(cuMemFree(more), CUDA_SUCCESS);
}

TEST_F(Capture, AnotherThreadIsHeldToAGlobalCaptureNotToAThreadLocalOne) {
  for (const CUstreamCaptureMode mode :
       {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}) {
    ASSERT_EQ(cuStreamBeginCapture(stream_, mode), CUDA_SUCCESS);
    CUresult elsewhere = CUDA_ERROR_UNKNOWN;
    std::thread([&] {
      cuCtxSetCurrent(context_);
      CUdeviceptr ptr = 0;
      elsewhere = cuMemAlloc(&ptr, 512);
      if (elsewhere == CUDA_SUCCESS) cuMemFree(ptr);
    }).join();
    CUgraph graph = nullptr;
    const CUresult ended = cuStreamEndCapture(stream_, &graph);
    if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
      EXPECT_EQ(elsewhere, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      EXPECT_EQ(ended, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
      EXPECT_EQ(elsewhere, CUDA_SUCCESS);
      EXPECT_EQ(ended, CUDA_SUCCESS);
      EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
    }
  }
}

TEST_F(Capture, WaitingForACapturingStreamIsAnError) {
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(Capture, ForkedStreamsMustBeJoinedBeforeTheEnd) {
  CUstream side = nullptr;
  ASSERT_EQ(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent fork = nullptr;
  CUevent join = nullptr;
  ASSERT_EQ(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  for (const bool joined : {true, false}) {
    ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(cuEventRecord(fork, stream_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    EXPECT_EQ(cuStreamIsCapturing(side, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "forked into the capture";
    EXPECT_EQ(cuMemsetD8Async(data_ + 100, 3, 1, side), CUDA_SUCCESS);
    if (joined) {
      ASSERT_EQ(cuEventRecord(join, side), CUDA_SUCCESS);
      ASSERT_EQ(cuStreamWaitEvent(stream_, join, 0), CUDA_SUCCESS);
    }
    CUgraph graph = nullptr;
    CUgraph other = nullptr;
    EXPECT_EQ(cuStreamEndCapture(side, &other), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
        << "only the origin ends it";
    const CUresult ended = cuStreamEndCapture(stream_, &graph);
    if (joined) {
      // The unmatched end above spoilt it.
      EXPECT_EQ(ended, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
      EXPECT_EQ(ended, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    EXPECT_EQ(cuStreamIsCapturing(side, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE) << "the side stream left with it";
  }
  // Joined, and ended where it began: the side stream's work is in the graph.
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8Async(data_ + 100, 3, 1, side), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8Async(data_ + 100, 3, 1, side), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(join, side), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(stream_, join, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(byte_at(100), 0);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(byte_at(100), 3);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  cuEventDestroy(fork);
  cuEventDestroy(join);
  cuStreamDestroy(side);
}

TEST_F(Capture, TheLegacyStreamCannotBeCapturedNorACaptureBegunTwice) {
  EXPECT_EQ(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_ERROR_ILLEGAL_STATE) << "nothing began";
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "1"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
