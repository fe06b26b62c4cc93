// The catalogue of line items: every id the planner reports, declared once with what the item
// is. Rules that depend on an item ("is it training state?", "is it in the checkpoint?") ask
// its traits here, never its id string.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trainledger/plan_input.hpp"

namespace trainledger {

// What an item measures.
enum class Role : std::uint8_t {
  state,          // persistent training state on the GPU (weights, gradients, optimizer state)
  activation,     // tensors saved for backward (and the loss's log-probs)
  temporary,      // buffers that live during one phase of the step
  overhead,       // fixed per-GPU costs (CUDA context, NCCL, workspaces, allocator reserve)
  host,           // host memory of one node
  communication,  // bytes sent per GPU per step by one parallel dimension
  time,           // the step and its parts, throughput and utilization
  reliability,    // checkpoints and failures
  rl,             // RL post-training: the phases around training (docs/rl.md)
};
std::string_view to_string(Role r);

enum class ItemId : std::uint8_t {
  // state
  params,
  params_frozen,
  params_nf4,
  params_nf4_constants,
  params_fp8,
  grads,
  optimizer_m,
  optimizer_v,
  optimizer_state,
  master,
  // activations
  activations,
  activations_edges,
  logits,
  // temporaries and overheads
  temporaries,
  overhead_cuda_context,
  overhead_nccl,
  overhead_cublas_workspace,
  overhead_fragmentation,
  // host memory
  host_offload,
  host_activations,
  host_checkpoint_staging,
  host_data_workers,
  host_runtime,
  // communication
  comm_dp,
  comm_tp,
  comm_pp,
  comm_cp,
  comm_ep,
  // time
  time_compute,
  time_recompute,
  time_comm_exposed,
  time_bubble,
  time_optimizer,
  time_offload,
  time_host,
  time_step,
  pipeline_bubble_fraction,
  throughput_tokens_per_s,
  throughput_tokens_per_s_per_gpu,
  mfu,
  hfu,
  time_to_train,
  scaling_efficiency,
  // reliability
  checkpoint_size,
  checkpoint_write_time,
  mtbf,
  checkpoint_interval_young,
  checkpoint_interval_daly,
  checkpoint_waste,
  checkpoint_waste_planned,
  reliability_time_lost,
  reliability_failures,
  // RL post-training (docs/rl.md): memory of the phases around training, per GPU
  rl_engine_weights,
  rl_engine_activations,
  rl_kv_cache,
  rl_cuda_graphs,
  rl_trainer_resident,
  rl_reference_weights,
  rl_critic_weights,
  rl_forward,
  rl_sync_buffer,
  rl_engine_asleep,
  // and the step's phases
  rl_time_prefill,
  rl_time_decode,
  rl_time_log_probs,
  rl_time_reference,
  rl_time_reward,
  rl_time_values,
  rl_time_training,
  rl_time_critic_training,
  rl_time_weight_sync,
  rl_time_sleep_wake,
  rl_time_step,
  rl_tokens_per_s_per_gpu,
  rl_training_mfu,
  rl_rollout_idle,
  rl_training_idle,
};
inline constexpr int k_item_count = static_cast<int>(ItemId::rl_training_idle) + 1;

// What an item is, for the rules that need to know.
struct ItemInfo {
  ItemId id;
  std::string_view name;  // the id reports print ("optimizer.m")
  Role role;
  // The ZeRO stage from which the item is sharded over the shard group (0: never).
  int zero_stage = 0;
  bool at_init = false;        // allocated before the first step (weights, master copy)
  bool in_checkpoint = false;  // written to a training checkpoint
  bool optimizer_io = false;   // read or written by the optimizer step
  // The smallest parallel.offload setting that moves the item to host memory (none: never).
  Offload offloaded_by = Offload::none;
  bool step_part = false;  // one of the parts that add up to time.step
};

const ItemInfo& info(ItemId id);
// The item named `name` ("optimizer.m"), if there is one.
std::optional<ItemId> item_by_name(std::string_view name);

// Whether parallel.offload = `setting` keeps the item in host memory.
bool offloaded_under(ItemId id, Offload setting);

}  // namespace trainledger
