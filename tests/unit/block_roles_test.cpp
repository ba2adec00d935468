// Each rule of analysis/roles/block_roles.h on a hand-built PyTorch-like trace: a parameter moved
// by Module._apply, an activation kept into backward, forward and backward temporaries, a gradient
// made by the autograd engine's thread, Adam's state from _init_group, a step temporary, and
// blocks no rule names (unknown). Real PyTorch's roles are checked against torch and MemTracker
// in tests/torch/test_roles.py.
#include "analysis/roles/block_roles.h"

#include <gtest/gtest.h>

#include "analysis/time/report_time_index.h"
#include "role_trace_test.h"
#include "storage/trace_reader.h"
#include "trace_builder.h"

namespace vramtrace::analysis {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr const char* kTorch = "/venv/lib/python3.11/site-packages/torch";

// Callsites, each a stack innermost first.
enum Callsite : std::int64_t {
  kParameter = 10,  // Module._apply < <module>
  kForward,         // Model.forward < <module>
  kSeed,            // torch.autograd.backward < Tensor.backward < <module> (main thread)
  kEngine,          // torch::autograd::Engine::thread_main (the autograd thread)
  kInitGroup,       // Adam._init_group < Adam.step < <module>
  kStep,            // _multi_tensor_adam < Adam.step < <module>
  kEvaluate,        // evaluate < <module>
};

class BlockRolesTest : public RoleTraceTest {
 protected:
  void SetUp() override {
    auto w = start("roles.db", 128 * kMiB);
    ASSERT_NE(w, nullptr);
    add_stacks(*w);
    const auto block = [&](std::int64_t id, std::uint64_t size, std::uint64_t seq,
                           std::int64_t callsite,
                           std::int64_t utid = 1) { add_block(*w, id, size, seq, callsite, utid); };
    const auto free = [&](std::int64_t id, std::uint64_t seq, std::int64_t utid = 1) {
      add_free(*w, id, seq, utid);
    };
    block(2, 1 * kMiB, 2, kParameter);  // parameter, never freed
    block(3, 8 * kMiB, 3, kForward);    // activation: freed by backward
    block(4, 4 * kMiB, 4, kForward);    // forward temporary
    free(4, 5);
    block(5, 512, 6, kSeed);            // backward begins: the grad seed, a temporary
    block(6, 1 * kMiB, 7, kEngine, 2);  // gradient: outlives backward
    block(7, 2 * kMiB, 8, kEngine, 2);  // backward temporary
    free(5, 9);
    free(7, 11, 2);
    free(3, 12, 2);
    block(8, 2 * kMiB, 13, kInitGroup);  // Adam's state
    block(9, 1 * kMiB, 14, kStep);       // step temporary
    free(9, 15);
    block(10, 3 * kMiB, 16, kEvaluate);   // no backward after it: unknown
    block(11, 256 * 1024, 17, kForward);  // a mark before its free: not a temporary
    testing::ProcessWriter{*w, 1}.range(1, "checkpoint", 18, 18);
    free(11, 19);
    open(*w);
  }

  static void add_stacks(storage::TraceWriter& w) {
    const std::string module_py = std::string(kTorch) + "/nn/modules/module.py";
    const std::string adam_py = std::string(kTorch) + "/optim/adam.py";
    const std::string autograd_py = std::string(kTorch) + "/autograd/__init__.py";
    const std::string tensor_py = std::string(kTorch) + "/_tensor.py";
    const auto py = storage::FrameLanguage::kPython;
    int module = 1;
    for (const std::string& file :
         {std::string("/work/train.py"), module_py, adam_py, autograd_py, tensor_py}) {
      w.add_module(module++, file, "");
    }
    w.add_module(module, std::string(kTorch) + "/lib/libtorch_cpu.so", "");
    w.add_frame({1, 1, 5, "<module>", "/work/train.py", 5, false, py});
    w.add_frame({2, 2, 966, "Module._apply", module_py, 966, false, py});
    w.add_frame({3, 1, 20, "Model.forward", "/work/train.py", 20, false, py});
    w.add_frame({4, 4, 350, "backward", autograd_py, 350, false, py});
    w.add_frame({5, 5, 600, "Tensor.backward", tensor_py, 600, false, py});
    w.add_frame(
        {6, 6, 0x1000,
         "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
         std::nullopt, std::nullopt, false});
    w.add_frame({7, 3, 150, "Adam._init_group", adam_py, 150, false, py});
    w.add_frame({8, 3, 230, "Adam.step", adam_py, 230, false, py});
    w.add_frame({9, 3, 791, "_multi_tensor_adam", adam_py, 791, false, py});
    w.add_frame({10, 1, 30, "evaluate", "/work/train.py", 30, false, py});
    w.add_callsite(1, std::nullopt, 1, 0);  // <module>
    w.add_callsite(kParameter, 1, 2, 1);
    w.add_callsite(kForward, 1, 3, 1);
    w.add_callsite(20, 1, 5, 1);  // Tensor.backward < <module>
    w.add_callsite(kSeed, 20, 4, 2);
    w.add_callsite(kEngine, std::nullopt, 6, 0);
    w.add_callsite(21, 1, 8, 1);  // Adam.step < <module>
    w.add_callsite(kInitGroup, 21, 7, 2);
    w.add_callsite(kStep, 21, 9, 2);
    w.add_callsite(kEvaluate, 1, 10, 1);
  }
};

TEST_F(BlockRolesTest, InBackwardTheWeightsActivationsGradientAndTemporariesEachHaveTheirRole) {
  const RoleTotals roles = at("seq:8");
  EXPECT_EQ(bytes(roles, BlockRole::kParameter), 1 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kActivation), 8 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kGradient), 1 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kTemporary), 2 * kMiB + 512);  // the engine's, the seed
  EXPECT_EQ(bytes(roles, BlockRole::kOptimizerState), 0u);
  EXPECT_EQ(bytes(roles, BlockRole::kUnknown), 0u);
  EXPECT_EQ(roles.total_bytes(), 12 * kMiB + 512);
  EXPECT_EQ(roles.count[static_cast<std::size_t>(BlockRole::kTemporary)], 2u);
}

TEST_F(BlockRolesTest, AForwardTemporaryIsFreedBeforeTheNextPhase) {
  const RoleTotals roles = at("seq:4");
  EXPECT_EQ(bytes(roles, BlockRole::kTemporary), 4 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kActivation), 8 * kMiB);
}

TEST_F(BlockRolesTest, TheOptimizersStateAndItsStepTemporaries) {
  const RoleTotals roles = at("seq:14");
  EXPECT_EQ(bytes(roles, BlockRole::kOptimizerState), 2 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kTemporary), 1 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kGradient), 1 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kParameter), 1 * kMiB);
  EXPECT_EQ(bytes(roles, BlockRole::kActivation), 0u);  // freed by backward
}

TEST_F(BlockRolesTest, WhatNoRuleNamesIsUnknownAndAMarkEndsAPhase) {
  const RoleTotals roles = at("seq:18");
  // The evaluation's block has no backward after it; the forward block lives across a mark.
  EXPECT_EQ(bytes(roles, BlockRole::kUnknown), 3 * kMiB + 256 * 1024);
  EXPECT_EQ(bytes(roles, BlockRole::kTemporary), 0u);
}

TEST_F(BlockRolesTest, ThePeakIsTheBlocksPeak) {
  const std::vector<ProcessRoles> report =
      build_role_report(*trace_, *index_, parse_moment("peak"), std::nullopt);
  ASSERT_EQ(report.size(), 1u);
  // Most bytes in live blocks: seq 4 (the weights, the activation and the forward
  // temporary), not the segment's peak at seq 1.
  EXPECT_EQ(report.front().seq, 4u);
  EXPECT_EQ(report.front().live.total_bytes(), 13 * kMiB);
}

TEST_F(BlockRolesTest, EveryBlocksLifeComesWithItsRole) {
  const std::vector<BlockLife> lives = block_lives(*trace_, 1);
  ASSERT_EQ(lives.size(), 10u);
  EXPECT_EQ(lives[0].role, BlockRole::kParameter);
  EXPECT_EQ(lives[0].free_seq, UINT64_MAX);
  EXPECT_EQ(lives[1].role, BlockRole::kActivation);
  EXPECT_EQ(lives[1].free_seq, 12u);
  EXPECT_EQ(lives[1].free_ns, testing::ns_of_seq(12));
  EXPECT_EQ(lives[1].size, 8 * kMiB);
  EXPECT_EQ(lives[4].role, BlockRole::kGradient);
  EXPECT_EQ(lives[6].role, BlockRole::kOptimizerState);
  EXPECT_EQ(lives[8].role, BlockRole::kUnknown);
}

TEST(BlockRoleNames, AreTheJsonKeys) {
  EXPECT_EQ(block_role_name(BlockRole::kParameter), "parameter");
  EXPECT_EQ(block_role_name(BlockRole::kOptimizerState), "optimizer_state");
  EXPECT_EQ(block_role_name(BlockRole::kUnknown), "unknown");
}

}  // namespace
}  // namespace vramtrace::analysis
