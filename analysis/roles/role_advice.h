// The remedies for memory by role, each with what it would save at the moment the roles were
// taken (the blocks' peak, by default) and why, from the trace's own figures: each remedy acts
// on one or a few roles (analysis/roles/block_roles.h), so its saving is an estimate over those
// roles' live bytes, never a guess. A rule fires only where its roles are a real share of the
// moment's memory; the thresholds are in docs/architecture.md ("Roles").
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "analysis/roles/block_roles.h"
#include "analysis/values/advice.h"

namespace vramtrace::analysis {

// Remedies that only the roles name.
inline constexpr const char* kAdviceLighterOptimizer = "lighter_optimizer";
inline constexpr const char* kAdviceSharding = "sharding";

// `moment` names the moment in the text ("the peak", "'after step'"); `world_size`: the
// process's distributed job (process.world_size); unset or 1: none.
std::vector<Advice> role_advice(const ProcessRoles& roles, std::string_view moment,
                                std::optional<int> world_size);

}  // namespace vramtrace::analysis
