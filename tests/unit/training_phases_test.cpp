// A training loop of five iterations with no marker, on a hand-built PyTorch-like trace: a
// parameter made as a bare tensor and one by a torch.nn layer's constructor, an input made
// before the loop, an activation per forward pass, a tensor kept per iteration (a leak), the
// gradients the first backward pass makes, and SGD's momentum made by its first step. The
// roles, the iterations found from the backward passes, and the growth they show. Real
// PyTorch's are checked against its own objects in tests/torch/test_training.py.
#include "analysis/roles/training_phases.h"

#include <gtest/gtest.h>

#include "analysis/reports/leak_growth.h"
#include "analysis/roles/block_roles.h"
#include "analysis/time/report_time_index.h"
#include "role_trace_test.h"
#include "storage/trace_reader.h"
#include "trace_builder.h"

namespace vramtrace::analysis {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kKiB = 1 << 10;
constexpr const char* kTorch = "/venv/lib/python3.11/site-packages/torch";
constexpr int kIterations = 5;

// Callsites, each a stack innermost first.
enum Callsite : std::int64_t {
  kBareParameter = 10,  // <module>:8 (torch.randn(..., device="cuda", requires_grad=True))
  kLayer,               // Linear.__init__ < <module>:7 (nn.Linear(..., device="cuda"))
  kInput,               // <module>:9
  kForward,             // Model.forward < <module>:12
  kKept,                // <module>:14 (kept.append(...))
  kWarmUp,              // <module>:13 (a cache filled in the second iteration, then held)
  kSeed,                // torch.autograd.backward < Tensor.backward < <module>:15
  kEngine,              // torch::autograd::Engine::thread_main (the autograd thread)
  kSgd,                 // _single_tensor_sgd < SGD.step < <module>:16
};

// Run twice: the tensors as the caching allocator's blocks, and as the cudaMalloc of each
// tensor that torch makes without caching (PYTORCH_NO_CUDA_MEMORY_CACHING=1; the same for
// cudaMallocAsync), under a frame of libc10_cuda. The answers must be the same, and the segment
// cudaMalloc'd outside c10 (a library's own memory) is no tensor.
class TrainingPhasesTest : public RoleTraceTest, public ::testing::WithParamInterface<bool> {
 protected:
  static constexpr std::int64_t kThroughC10 = 100;  // callsite + this: the same under c10

  void SetUp() override {
    const bool direct = GetParam();
    auto w = start("training.db", 256 * kMiB);
    ASSERT_NE(w, nullptr);
    add_stacks(*w);
    std::int64_t id = 1;
    std::uint64_t seq = 1;
    const auto block = [&](std::uint64_t size, std::int64_t callsite, std::int64_t utid = 1) {
      add_block(*w, ++id, size, ++seq, direct ? callsite + kThroughC10 : callsite, utid, direct);
      return id;
    };
    const auto free = [&](std::int64_t block_id, std::int64_t utid = 1) {
      add_free(*w, block_id, ++seq, utid, direct);
    };
    block(1 * kMiB, kBareParameter);
    block(512 * kKiB, kLayer);
    block(3 * kMiB, kInput);
    for (int i = 0; i < kIterations; ++i) {
      const std::int64_t activation = block(8 * kMiB, kForward);
      block(2 * kMiB, kKept);
      if (i == 1) block(4 * kMiB, kWarmUp);
      before_backward_.push_back(seq);
      free(block(512, kSeed));
      if (i == 0) {
        block(1 * kMiB, kEngine, 2);  // the gradients, kept (zero_grad(set_to_none=False))
        block(512 * kKiB, kEngine, 2);
      }
      free(activation, 2);
      if (i == 0) {
        block(1 * kMiB, kSgd);  // momentum buffers
        block(512 * kKiB, kSgd);
      }
      free(block(256 * kKiB, kSgd));  // a step temporary
    }
    open(*w);
  }

  static void add_stacks(storage::TraceWriter& w) {
    const std::string linear_py = std::string(kTorch) + "/nn/modules/linear.py";
    const std::string sgd_py = std::string(kTorch) + "/optim/sgd.py";
    const std::string autograd_py = std::string(kTorch) + "/autograd/__init__.py";
    const std::string tensor_py = std::string(kTorch) + "/_tensor.py";
    const auto py = storage::FrameLanguage::kPython;
    int module = 1;
    for (const std::string& file :
         {std::string("/work/train.py"), linear_py, sgd_py, autograd_py, tensor_py}) {
      w.add_module(module++, file, "");
    }
    const auto line = [&](std::int64_t frame, int number) {
      w.add_frame({frame, 1, static_cast<std::uint64_t>(number), "<module>", "/work/train.py",
                   number, false, py});
    };
    line(1, 7);
    line(2, 8);
    line(3, 9);
    line(4, 12);
    line(5, 14);
    line(15, 13);
    line(6, 15);
    line(7, 16);
    w.add_frame({8, 2, 106, "Linear.__init__", linear_py, 106, false, py});
    w.add_frame({9, 1, 20, "Model.forward", "/work/train.py", 20, false, py});
    w.add_frame({10, 4, 350, "backward", autograd_py, 350, false, py});
    w.add_frame({11, 5, 600, "Tensor.backward", tensor_py, 600, false, py});
    w.add_frame(
        {12, 6, 0x1000,
         "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
         std::nullopt, std::nullopt, false});
    w.add_frame({13, 3, 120, "SGD.step", sgd_py, 120, false, py});
    w.add_frame({14, 3, 330, "_single_tensor_sgd", sgd_py, 330, false, py});
    for (std::int64_t frame = 1; frame <= 7; ++frame) w.add_callsite(frame, std::nullopt, frame, 0);
    w.add_callsite(kBareParameter, std::nullopt, 2, 0);
    w.add_callsite(kLayer, 1, 8, 1);
    w.add_callsite(kInput, std::nullopt, 3, 0);
    w.add_callsite(kForward, 4, 9, 1);
    w.add_callsite(kKept, std::nullopt, 5, 0);
    w.add_callsite(kWarmUp, std::nullopt, 15, 0);
    w.add_callsite(20, 6, 11, 1);  // Tensor.backward < <module>:15
    w.add_callsite(kSeed, 20, 10, 2);
    w.add_callsite(kEngine, std::nullopt, 12, 0);
    w.add_callsite(21, 7, 13, 1);  // SGD.step < <module>:16
    w.add_callsite(kSgd, 21, 14, 2);
    // Each callsite again with c10's allocator innermost.
    w.add_module(module, std::string(kTorch) + "/lib/libc10_cuda.so", "");
    w.add_frame({16, module, 0x2000,
                 "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                 std::nullopt, std::nullopt, false});
    const std::pair<std::int64_t, int> depths[] = {{kBareParameter, 0}, {kLayer, 1},  {kInput, 0},
                                                   {kForward, 1},       {kKept, 0},   {kWarmUp, 0},
                                                   {kSeed, 2},          {kEngine, 0}, {kSgd, 2}};
    for (const auto& [callsite, depth] : depths)
      w.add_callsite(callsite + kThroughC10, callsite, 16, depth + 1);
  }

  std::vector<std::uint64_t> before_backward_;
};

TEST_P(TrainingPhasesTest, TheBackwardPassesAndTheEndsOfIterationsAreFound) {
  TrainingPhases phases(*trace_);
  phases.find(1);
  EXPECT_EQ(phases.backward_starts().size(), 5u);
  // The end of every iteration but the last: the next forward pass begins after them.
  ASSERT_EQ(phases.iteration_ends().size(), 4u);
  EXPECT_LT(phases.iteration_ends()[0], before_backward_[1]);
  EXPECT_GT(phases.iteration_ends()[0], before_backward_[0]);
  const std::int64_t c10 = GetParam() ? kThroughC10 : 0;
  EXPECT_TRUE(phases.keeps_across_iterations(kKept + c10));
  EXPECT_FALSE(phases.keeps_across_iterations(kForward + c10));
  EXPECT_FALSE(phases.keeps_across_iterations(kInput + c10));  // made before training began
}

TEST_P(TrainingPhasesTest, AtTheEndEachTensorHasItsRoleAndTheKeptOnesNone) {
  const RoleTotals roles = at("end");
  // The bare tensor takes the place of the 1 MiB gradient; the layer's is known by its stack.
  EXPECT_EQ(bytes(roles, BlockRole::kParameter), 1 * kMiB + 512 * kKiB);
  EXPECT_EQ(bytes(roles, BlockRole::kGradient), 1 * kMiB + 512 * kKiB);
  EXPECT_EQ(bytes(roles, BlockRole::kOptimizerState), 1 * kMiB + 512 * kKiB);  // momentum
  // The input, every kept tensor (the last iteration's too) and the cache: never an activation.
  EXPECT_EQ(bytes(roles, BlockRole::kUnknown), 3 * kMiB + kIterations * 2 * kMiB + 4 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kActivation), 0u);
  EXPECT_EQ(bytes(roles, BlockRole::kTemporary), 0u);
}

TEST_P(TrainingPhasesTest, BeforeTheLastBackwardItsActivationIsOneAndTheKeptTensorIsNot) {
  const RoleTotals roles = at("seq:" + std::to_string(before_backward_.back()));
  EXPECT_EQ(bytes(roles, BlockRole::kActivation), 8 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kUnknown), 3 * kMiB + kIterations * 2 * kMiB + 4 * kMiB);
}

TEST_P(TrainingPhasesTest, GrowthWithoutAMarkerIsTheKeptTensorsPerIterationNotTheWarmUp) {
  const LeakGrowth growth = build_leak_growth(*trace_, *index_, "", 32);
  EXPECT_TRUE(growth.marker.empty());
  ASSERT_EQ(growth.processes.size(), 1u);
  EXPECT_EQ(growth.processes[0].iterations, 5u);  // backward passes
  EXPECT_TRUE(growth.processes[0].marker.empty());
  EXPECT_EQ(describe_iterations(growth.processes[0]),
            "5 iterations found from its backward passes");
  // The cache rose once, in the first half, and held: no leak.
  ASSERT_EQ(growth.growing.size(), 1u);
  EXPECT_EQ(growth.growing[0].group.callsite_id, kKept + (GetParam() ? kThroughC10 : 0));
  EXPECT_DOUBLE_EQ(growth.growing[0].bytes_per_iteration, 2.0 * kMiB);
  // One more tensor kept each iteration: a leak, not one tensor remade larger.
  EXPECT_TRUE(growth.growing[0].kept());
  EXPECT_GT(growth.growing[0].counts.back(), growth.growing[0].counts.front());
  // A marker named must be there: no guess in its place.
  EXPECT_THROW(build_leak_growth(*trace_, *index_, "epoch", 32), BadMoment);
}

INSTANTIATE_TEST_SUITE_P(BlocksOrDriverAllocations, TrainingPhasesTest, ::testing::Bool());

}  // namespace
}  // namespace vramtrace::analysis
