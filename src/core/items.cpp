// The item catalogue (include/trainledger/items.hpp): one row per item, in ItemId order.
#include "trainledger/items.hpp"

#include <array>

namespace trainledger {

namespace {

constexpr ItemInfo state(ItemId id, std::string_view name, int zero_stage, bool at_init,
                         bool in_checkpoint, bool optimizer_io, Offload offloaded_by) {
  return ItemInfo{id,      name,          Role::state,  zero_stage,
                  at_init, in_checkpoint, optimizer_io, offloaded_by};
}

constexpr ItemInfo plain(ItemId id, std::string_view name, Role role) {
  return ItemInfo{id, name, role};
}

constexpr ItemInfo step_part(ItemId id, std::string_view name) {
  ItemInfo i{id, name, Role::time};
  i.step_part = true;
  return i;
}

constexpr Offload k_never = Offload::none;

// ZeRO shards optimizer state and the master copy from stage 1, gradients from 2, weights
// from 3 (Rajbhandari et al. 2020, §5). A checkpoint holds weights, master copy and optimizer
// state, not gradients (docs/formulas.md#errata 3). Offload moves the optimizer's state (with the
// gradients it reads) at "optimizer", the weights too at "optimizer+params" (ZeRO-Offload).
// The NF4 and FP8 copies derive from the weights: not saved, not touched by the optimizer.
constexpr std::array<ItemInfo, k_item_count> k_items = {{
    state(ItemId::params, "params", 3, true, true, true, Offload::optimizer_params),
    state(ItemId::params_frozen, "params.frozen", 3, true, false, false, Offload::optimizer_params),
    state(ItemId::params_nf4, "params.nf4", 3, true, false, false, k_never),
    state(ItemId::params_nf4_constants, "params.nf4_constants", 3, true, false, false, k_never),
    state(ItemId::params_fp8, "params.fp8", 0, true, false, false, k_never),
    state(ItemId::grads, "grads", 2, false, false, true, Offload::optimizer),
    state(ItemId::optimizer_m, "optimizer.m", 1, false, true, true, Offload::optimizer),
    state(ItemId::optimizer_v, "optimizer.v", 1, false, true, true, Offload::optimizer),
    state(ItemId::optimizer_state, "optimizer.state", 1, false, true, true, Offload::optimizer),
    state(ItemId::master, "master", 1, true, true, true, Offload::optimizer),
    plain(ItemId::activations, "activations", Role::activation),
    plain(ItemId::activations_edges, "activations.edges", Role::activation),
    plain(ItemId::logits, "logits", Role::activation),
    plain(ItemId::temporaries, "temporaries", Role::temporary),
    plain(ItemId::overhead_cuda_context, "overhead.cuda_context", Role::overhead),
    plain(ItemId::overhead_nccl, "overhead.nccl", Role::overhead),
    plain(ItemId::overhead_cublas_workspace, "overhead.cublas_workspace", Role::overhead),
    plain(ItemId::overhead_fragmentation, "overhead.fragmentation", Role::overhead),
    plain(ItemId::host_offload, "host.offload", Role::host),
    plain(ItemId::host_activations, "host.activations", Role::host),
    plain(ItemId::host_checkpoint_staging, "host.checkpoint_staging", Role::host),
    plain(ItemId::host_data_workers, "host.data_workers", Role::host),
    plain(ItemId::host_runtime, "host.runtime", Role::host),
    plain(ItemId::comm_dp, "comm.dp", Role::communication),
    plain(ItemId::comm_tp, "comm.tp", Role::communication),
    plain(ItemId::comm_pp, "comm.pp", Role::communication),
    plain(ItemId::comm_cp, "comm.cp", Role::communication),
    plain(ItemId::comm_ep, "comm.ep", Role::communication),
    step_part(ItemId::time_compute, "time.compute"),
    step_part(ItemId::time_recompute, "time.recompute"),
    step_part(ItemId::time_comm_exposed, "time.comm_exposed"),
    step_part(ItemId::time_bubble, "time.bubble"),
    step_part(ItemId::time_optimizer, "time.optimizer"),
    step_part(ItemId::time_offload, "time.offload"),
    step_part(ItemId::time_host, "time.host"),
    plain(ItemId::time_step, "time.step", Role::time),
    plain(ItemId::pipeline_bubble_fraction, "pipeline.bubble_fraction", Role::time),
    plain(ItemId::throughput_tokens_per_s, "throughput.tokens_per_s", Role::time),
    plain(ItemId::throughput_tokens_per_s_per_gpu, "throughput.tokens_per_s_per_gpu", Role::time),
    plain(ItemId::mfu, "mfu", Role::time),
    plain(ItemId::hfu, "hfu", Role::time),
    plain(ItemId::time_to_train, "time.to_train", Role::time),
    plain(ItemId::scaling_efficiency, "scaling.efficiency", Role::time),
    plain(ItemId::checkpoint_size, "checkpoint.size", Role::reliability),
    plain(ItemId::checkpoint_write_time, "checkpoint.write_time", Role::reliability),
    plain(ItemId::mtbf, "mtbf", Role::reliability),
    plain(ItemId::checkpoint_interval_young, "checkpoint.interval_young", Role::reliability),
    plain(ItemId::checkpoint_interval_daly, "checkpoint.interval_daly", Role::reliability),
    plain(ItemId::checkpoint_waste, "checkpoint.waste", Role::reliability),
    plain(ItemId::checkpoint_waste_planned, "checkpoint.waste_planned", Role::reliability),
    plain(ItemId::reliability_time_lost, "reliability.time_lost", Role::reliability),
    plain(ItemId::reliability_failures, "reliability.failures", Role::reliability),
    plain(ItemId::rl_engine_weights, "rl.engine_weights", Role::rl),
    plain(ItemId::rl_engine_activations, "rl.engine_activations", Role::rl),
    plain(ItemId::rl_kv_cache, "rl.kv_cache", Role::rl),
    plain(ItemId::rl_cuda_graphs, "rl.cuda_graphs", Role::rl),
    plain(ItemId::rl_trainer_resident, "rl.trainer_resident", Role::rl),
    plain(ItemId::rl_reference_weights, "rl.reference_weights", Role::rl),
    plain(ItemId::rl_critic_weights, "rl.critic_weights", Role::rl),
    plain(ItemId::rl_forward, "rl.forward", Role::rl),
    plain(ItemId::rl_sync_buffer, "rl.sync_buffer", Role::rl),
    plain(ItemId::rl_engine_asleep, "rl.engine_asleep", Role::rl),
    plain(ItemId::rl_time_prefill, "rl.time.prefill", Role::rl),
    plain(ItemId::rl_time_decode, "rl.time.decode", Role::rl),
    plain(ItemId::rl_time_log_probs, "rl.time.log_probs", Role::rl),
    plain(ItemId::rl_time_reference, "rl.time.reference", Role::rl),
    plain(ItemId::rl_time_reward, "rl.time.reward", Role::rl),
    plain(ItemId::rl_time_values, "rl.time.values", Role::rl),
    plain(ItemId::rl_time_training, "rl.time.training", Role::rl),
    plain(ItemId::rl_time_critic_training, "rl.time.critic_training", Role::rl),
    plain(ItemId::rl_time_weight_sync, "rl.time.weight_sync", Role::rl),
    plain(ItemId::rl_time_sleep_wake, "rl.time.sleep_wake", Role::rl),
    plain(ItemId::rl_time_step, "rl.time.step", Role::rl),
    plain(ItemId::rl_tokens_per_s_per_gpu, "rl.tokens_per_s_per_gpu", Role::rl),
    plain(ItemId::rl_training_mfu, "rl.training_mfu", Role::rl),
    plain(ItemId::rl_rollout_idle, "rl.rollout_idle", Role::rl),
    plain(ItemId::rl_training_idle, "rl.training_idle", Role::rl),
}};

constexpr bool rows_in_order() {
  for (int i = 0; i < k_item_count; ++i)
    if (static_cast<int>(k_items[i].id) != i) return false;
  return true;
}
static_assert(rows_in_order(), "k_items must list the items in ItemId order");

}  // namespace

std::string_view to_string(Role r) {
  switch (r) {
    case Role::state:
      return "state";
    case Role::activation:
      return "activation";
    case Role::temporary:
      return "temporary";
    case Role::overhead:
      return "overhead";
    case Role::host:
      return "host";
    case Role::communication:
      return "communication";
    case Role::time:
      return "time";
    case Role::reliability:
      return "reliability";
    case Role::rl:
      return "rl";
  }
  return "?";
}

const ItemInfo& info(ItemId id) { return k_items[static_cast<int>(id)]; }

std::optional<ItemId> item_by_name(std::string_view name) {
  for (const ItemInfo& i : k_items)
    if (i.name == name) return i.id;
  return std::nullopt;
}

bool offloaded_under(ItemId id, Offload setting) {
  const Offload by = info(id).offloaded_by;
  if (by == Offload::none || setting == Offload::none) return false;
  return by == Offload::optimizer || setting == Offload::optimizer_params;
}

}  // namespace trainledger
