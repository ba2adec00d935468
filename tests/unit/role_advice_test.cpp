// The remedies by role (analysis/roles/role_advice.h): each fires with its estimate where its roles
// are a real share of the moment's memory, and is silent where they are not, where the program
// already does it (autocast), or where it cannot apply (sharding a job of one rank).
#include "analysis/roles/role_advice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace vramtrace::analysis {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

ProcessRoles roles_of(std::map<BlockRole, std::uint64_t> mib) {
  ProcessRoles roles;
  roles.pid = 4242;
  for (const auto& [role, size] : mib) roles.live.add(role, size * kMiB);
  return roles;
}

const Advice* find(const std::vector<Advice>& advice, std::string_view id) {
  const auto it =
      std::find_if(advice.begin(), advice.end(), [&](const Advice& a) { return a.id == id; });
  return it == advice.end() ? nullptr : &*it;
}

std::uint64_t evidence(const Advice& advice, std::string_view name) {
  for (const auto& [key, value] : advice.evidence) {
    if (key == name) return value;
  }
  ADD_FAILURE() << advice.id << " has no evidence " << name;
  return 0;
}

TEST(RoleAdvice, ActivationsAtThePeakNameCheckpointingMicroBatchesAndMixedPrecision) {
  ProcessRoles roles = roles_of({{BlockRole::kParameter, 10},
                                 {BlockRole::kGradient, 10},
                                 {BlockRole::kActivation, 60},
                                 {BlockRole::kTemporary, 20}});
  roles.activation_sites = {{"Block.forward at model.py:40", 45 * kMiB, 12},
                            {"embed at model.py:12", 15 * kMiB, 1}};
  const std::vector<Advice> advice = role_advice(roles, "the peak", std::nullopt);
  const Advice* checkpointing = find(advice, kAdviceActivationCheckpointing);
  ASSERT_NE(checkpointing, nullptr);
  EXPECT_EQ(evidence(*checkpointing, "saving_bytes"), 60 * kMiB);
  EXPECT_EQ(evidence(*checkpointing, "top_site_bytes"), 45 * kMiB);
  EXPECT_NE(checkpointing->text.find("60% of the peak, 60.0 MiB, most from Block.forward at "
                                     "model.py:40 (45.0 MiB)"),
            std::string::npos)
      << checkpointing->text;
  const Advice* micro_batches = find(advice, kAdviceMicroBatches);
  ASSERT_NE(micro_batches, nullptr);
  EXPECT_EQ(evidence(*micro_batches, "saving_bytes"), 40 * kMiB);  // (60 + 20) / 2
  const Advice* mixed = find(advice, kAdviceMixedPrecision);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(evidence(*mixed, "saving_bytes"), 35 * kMiB);  // (60 + 10) / 2
  // No optimizer state, one rank: nothing about either.
  EXPECT_EQ(find(advice, kAdviceLighterOptimizer), nullptr);
  EXPECT_EQ(find(advice, kAdviceSharding), nullptr);
}

TEST(RoleAdvice, SilentWhereTheRolesAreASmallShare) {
  const ProcessRoles roles = roles_of({{BlockRole::kParameter, 70},
                                       {BlockRole::kActivation, 10},
                                       {BlockRole::kGradient, 5},
                                       {BlockRole::kOptimizerState, 10},
                                       {BlockRole::kTemporary, 5}});
  EXPECT_TRUE(role_advice(roles, "the peak", std::nullopt).empty());
  EXPECT_TRUE(role_advice(ProcessRoles{}, "the peak", std::nullopt).empty());
}

TEST(RoleAdvice, MixedPrecisionIsSilentWhereAutocastIsAlreadyUsed) {
  ProcessRoles roles = roles_of({{BlockRole::kActivation, 50}, {BlockRole::kParameter, 50}});
  EXPECT_NE(find(role_advice(roles, "the peak", std::nullopt), kAdviceMixedPrecision), nullptr);
  roles.autocast_seen = true;
  EXPECT_EQ(find(role_advice(roles, "the peak", std::nullopt), kAdviceMixedPrecision), nullptr);
}

TEST(RoleAdvice, AdamsStateNamesSgdAndEightBitWithTheirSavings) {
  ProcessRoles roles = roles_of({{BlockRole::kParameter, 20},
                                 {BlockRole::kGradient, 20},
                                 {BlockRole::kOptimizerState, 40},
                                 {BlockRole::kTemporary, 20}});
  roles.optimizer = "Adam";
  const std::vector<Advice> advice = role_advice(roles, "'after step'", std::nullopt);
  const Advice* optimizer = find(advice, kAdviceLighterOptimizer);
  ASSERT_NE(optimizer, nullptr);
  EXPECT_EQ(evidence(*optimizer, "optimizer_state_bytes"), 40 * kMiB);
  EXPECT_EQ(evidence(*optimizer, "saving_bytes"), 20 * kMiB);            // SGD with momentum
  EXPECT_EQ(evidence(*optimizer, "eight_bit_saving_bytes"), 30 * kMiB);  // 8-bit Adam
  EXPECT_NE(optimizer->text.find("Adam's state is 40% of 'after step', 40.0 MiB"),
            std::string::npos)
      << optimizer->text;
}

TEST(RoleAdvice, ShardingOnlyInAJobOfSeveralRanks) {
  const ProcessRoles roles = roles_of({{BlockRole::kParameter, 30},
                                       {BlockRole::kGradient, 30},
                                       {BlockRole::kOptimizerState, 15},
                                       {BlockRole::kTemporary, 25}});
  EXPECT_EQ(find(role_advice(roles, "the peak", std::nullopt), kAdviceSharding), nullptr);
  EXPECT_EQ(find(role_advice(roles, "the peak", 1), kAdviceSharding), nullptr);
  const std::vector<Advice> four_ranks = role_advice(roles, "the peak", 4);
  const Advice* sharding = find(four_ranks, kAdviceSharding);
  ASSERT_NE(sharding, nullptr);
  // (30 + 30 + 15) MiB, three quarters of it off each of 4 ranks.
  EXPECT_EQ(evidence(*sharding, "saving_bytes"), 75 * kMiB / 4 * 3);
  EXPECT_EQ(evidence(*sharding, "world_size"), 4u);
}

}  // namespace
}  // namespace vramtrace::analysis
