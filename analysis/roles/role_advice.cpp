#include "analysis/roles/role_advice.h"

#include <fmt/core.h>

#include <string>

namespace vramtrace::analysis {
namespace {

// A remedy is worth naming when the roles it acts on are at least this share of the moment.
constexpr double kActivationShare = 0.25;      // checkpointing, smaller micro-batches
constexpr double kMixedPrecisionShare = 0.25;  // activations and gradients together
constexpr double kOptimizerShare = 0.20;
constexpr double kShardedShare = 0.25;  // parameters, gradients and optimizer state together

std::uint64_t of(const ProcessRoles& roles, BlockRole role) {
  return roles.live.bytes[static_cast<std::size_t>(role)];
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

std::vector<Advice> role_advice(const ProcessRoles& roles, std::string_view moment,
                                std::optional<int> world_size) {
  std::vector<Advice> advice;
  const std::uint64_t total = roles.live.total_bytes();
  if (total == 0) return advice;
  const std::uint64_t parameters = of(roles, BlockRole::kParameter);
  const std::uint64_t gradients = of(roles, BlockRole::kGradient);
  const std::uint64_t state = of(roles, BlockRole::kOptimizerState);
  const std::uint64_t activations = of(roles, BlockRole::kActivation);
  const std::uint64_t temporaries = of(roles, BlockRole::kTemporary);
  const auto share = [&](std::uint64_t bytes) {
    return static_cast<double>(bytes) / static_cast<double>(total);
  };

  if (share(activations) >= kActivationShare) {
    std::string most;
    if (!roles.activation_sites.empty()) {
      const RoleSite& top = roles.activation_sites.front();
      most = fmt::format(", most from {} ({})", top.where, advice_bytes(top.bytes));
    }
    advice.push_back(
        {kAdviceActivationCheckpointing,
         fmt::format("Activations (tensors kept from forward for backward) are {} of {}, "
                     "{}{}. Activation checkpointing (torch.utils.checkpoint) keeps only each "
                     "checkpointed block's inputs and recomputes the rest during backward: up to "
                     "about {} less at {}, for about one more forward pass of compute.",
                     percent(activations, total), moment, advice_bytes(activations), most,
                     advice_bytes(activations), moment),
         {{"pid", roles.pid},
          {"live_bytes", total},
          {"activation_bytes", activations},
          {"top_site_bytes", roles.activation_sites.empty() ? 0 : roles.activation_sites[0].bytes},
          {"saving_bytes", activations}},
         std::nullopt});
    // torch's cuBLAS workspaces are the same size whatever the batch.
    const std::uint64_t with_batch = activations + temporaries - roles.workspace_bytes;
    const std::uint64_t halved = with_batch / 2;
    advice.push_back(
        {kAdviceMicroBatches,
         fmt::format("Half the micro-batch, with gradients accumulated over two, halves what grows "
                     "with the batch: the activations ({}) and the temporaries ({}{}) at {}, "
                     "about {} less.",
                     advice_bytes(activations), advice_bytes(temporaries),
                     roles.workspace_bytes == 0
                         ? ""
                         : fmt::format(", {} of them cuBLAS workspaces, which do not",
                                       advice_bytes(roles.workspace_bytes)),
                     moment, advice_bytes(halved)),
         {{"pid", roles.pid},
          {"activation_bytes", activations},
          {"temporary_bytes", temporaries},
          {"workspace_bytes", roles.workspace_bytes},
          {"saving_bytes", halved}},
         std::nullopt});
  }

  if (!roles.autocast_seen && share(activations + gradients) >= kMixedPrecisionShare) {
    const std::uint64_t halved = (activations + gradients) / 2;
    advice.push_back(
        {kAdviceMixedPrecision,
         fmt::format("Activations and gradients are {} of {} ({} and {}), and no live "
                     "tensor was made under torch.autocast. In float32, mixed precision "
                     "(torch.autocast with bfloat16 or float16) halves both: about {} less.",
                     percent(activations + gradients, total), moment, advice_bytes(activations),
                     advice_bytes(gradients), advice_bytes(halved)),
         {{"pid", roles.pid},
          {"activation_bytes", activations},
          {"gradient_bytes", gradients},
          {"saving_bytes", halved}},
         std::nullopt});
  }

  if (share(state) >= kOptimizerShare) {
    const std::string name = roles.optimizer.empty() ? "The optimizer" : roles.optimizer;
    const bool adam = roles.optimizer == "Adam" || roles.optimizer == "AdamW";
    const std::uint64_t eight_bit = state / 4 * 3;
    std::string text = fmt::format("{}'s state is {} of {}, {}.", name, percent(state, total),
                                   moment, advice_bytes(state));
    if (adam) {
      text += fmt::format(
          " Adam keeps two float32 tensors per parameter: SGD with momentum keeps one (about {} "
          "less), an 8-bit Adam (bitsandbytes) keeps them in a quarter of the bytes (about {} "
          "less).",
          advice_bytes(state / 2), advice_bytes(eight_bit));
    } else {
      text += fmt::format(" An 8-bit variant keeps it in a quarter of the bytes: about {} less.",
                          advice_bytes(eight_bit));
    }
    advice.push_back({kAdviceLighterOptimizer,
                      std::move(text),
                      {{"pid", roles.pid},
                       {"optimizer_state_bytes", state},
                       {"saving_bytes", adam ? state / 2 : eight_bit},
                       {"eight_bit_saving_bytes", eight_bit}},
                      std::nullopt});
  }

  const std::uint64_t sharded = parameters + gradients + state;
  if (world_size && *world_size > 1 && share(sharded) >= kShardedShare) {
    const auto ranks = static_cast<std::uint64_t>(*world_size);
    const std::uint64_t saving = sharded / ranks * (ranks - 1);
    advice.push_back(
        {kAdviceSharding,
         fmt::format("Parameters, gradients and optimizer state are {} of {}, {}, on each "
                     "of {} ranks. FSDP (or DeepSpeed ZeRO-3) shards all three across the ranks: "
                     "about {} less on each; ZeRO-1 and ZeRO-2 shard the state, and the "
                     "gradients, alone.",
                     percent(sharded, total), moment, advice_bytes(sharded), ranks,
                     advice_bytes(saving)),
         {{"pid", roles.pid},
          {"world_size", ranks},
          {"parameter_bytes", parameters},
          {"gradient_bytes", gradients},
          {"optimizer_state_bytes", state},
          {"saving_bytes", saving}},
         std::nullopt});
  }
  return advice;
}

}  // namespace vramtrace::analysis
