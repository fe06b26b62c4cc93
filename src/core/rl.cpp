// RL post-training (docs/rl.md): the phases of one step around the actor's training. The
// actor trains with the plan's own layout (its ledger and step time are the plan's); a
// rollout engine generates the samples; the reference, reward model and critic run forward
// passes of the actor's architecture with its layout. Memory per GPU per phase, the step's
// time per phase, and the throughput as the RL frameworks publish it.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "rl_parts.hpp"
#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

using rl_detail::T;
using rl_detail::Trainer;

namespace {

constexpr const char* k_src_budget =
    "vLLM: gpu_memory_utilization is the share of the GPU's total memory the engine may use for "
    "its weights, the activations of its profiling run and the KV cache; the KV cache is what "
    "the budget leaves (vllm/v1/worker/gpu_worker.py determine_available_memory: requested "
    "memory − non-KV memory). SGLang's mem_fraction_static covers weights and the KV pool, the "
    "activations lie beside it (python/sglang/srt/model_executor/model_runner.py "
    "profile_max_num_token)";
constexpr const char* k_src_kv =
    "KV cache per token: 2 × KV heads per rank × head size × layers × dtype bytes (keys at the "
    "key head size, values at the value head size); KV heads split over the engine's tensor "
    "parallelism and replicated when it exceeds them; MLA caches its latent and rope key "
    "(kv_lora_rank + qk_rope_head_dim per layer), replicated (vLLM's MLA backends)";
constexpr const char* k_src_engine_act =
    "the engine's profiling run: one forward of max_num_batched_tokens tokens (its gate/up and "
    "hidden-sized activations in 16 bits) and the sampler's fp32 logits for max_num_seqs "
    "sequences (vllm/v1/worker/gpu_model_runner.py profile_run, _dummy_sampler_run)";
constexpr const char* k_src_graphs =
    "CUDA graphs of the decode step, captured for batch sizes up to max_num_seqs: a graph "
    "memory pool beside the budget (vLLM logs 'Graph capturing finished ... took 0.3-1.5 GiB' "
    "for 7-70B models at the default capture sizes); assumed 1 GiB, 0 in eager mode";
constexpr const char* k_src_resident =
    "the trainer's state that stays on the GPU between its phases: weights and optimizer state "
    "unless rl.offload_params / rl.offload_optimizer move them to host memory (verl "
    "fsdp_workers.py offload_fsdp_model_to_cpu, offload_fsdp_optimizer); gradients are freed "
    "after the step (zero_grad(set_to_none)) except Megatron-Core's contiguous gradient buffer";
constexpr const char* k_src_forward =
    "a forward-only pass of one log-prob micro-batch and one layer's activations (nothing is "
    "kept for backward). The actor's old log-probs: the logits in 16 bits (2 B), the full-vocab "
    "entropy verl always computes there (its softmax and product, 2 B each), and the log-probs "
    "from flash-attn's Triton cross-entropy in place (verl/workers/actor/dp_actor.py "
    "_forward_micro_batch, calculate_entropy; verl/utils/torch_functional.py "
    "logprobs_from_logits, entropy_from_logits): 6 B per logit. The reference: logits and the "
    "in-place cross-entropy only, 2 B per logit (calculate_entropy=False). Without the entropy "
    "(rl.log_prob_entropy = false: TRL's _get_per_token_logps_and_entropies with "
    "compute_entropy=False) the actor's is 2 B too; with rl.response_logits_only (TRL's "
    "logits_to_keep) only the response's tokens have logits. A reward model or a critic ends "
    "in a scalar head: no vocabulary-wide logits";
constexpr const char* k_src_asleep =
    "the engine while training runs: with sleep (vLLM sleep level 1: weights to host memory, KV "
    "cache freed; level 2: both freed) only its CUDA-graph pool stays; without sleep its whole "
    "budget does (vllm/device_allocator/cumem.py CuMemAllocator.sleep)";
constexpr const char* k_src_sync =
    "weight sync of the colocated engine: the engine's weights are woken (its KV cache stays "
    "freed until the sync ends), the trainer gathers each parameter whole (FSDP: "
    "DTensor.full_tensor() of its fp32 parameter, then the bf16 cast; Megatron: the bf16 "
    "parameter gathered over tp and pp) and packs it into a bucket that the engine clones "
    "before load_weights (verl/workers/fsdp_workers.py rollout_mode; "
    "verl/workers/rollout/vllm_rollout/vllm_rollout.py ServerAdapter.update_weights, "
    "utils.py update_weights_from_ipc; bucket rl.sync_bucket, verl's "
    "update_weights_bucket_megabytes 2048): a bucket on each side and the largest tensor (the "
    "embedding) gathered";
// KV cache bytes per token of one engine rank, every layer.
double kv_per_token(const ModelSpec& m, int tp, double bytes) {
  if (is_mla(m)) return m.layers * static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim) * bytes;
  const double kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const double local = std::max(1.0, std::ceil(kv / tp));
  return m.layers * local * (head_dim(m) + v_head_dim(m)) * bytes;
}

const StageMemory& worst_stage(const PlanResult& p) {
  for (const StageMemory& s : p.stages)
    if (s.stage == p.worst_stage) return s;
  return p.stages.front();
}

Trainer trainer_state(const PlanInput& in, const PlanResult& p) {
  Trainer t;
  const StageMemory& w = worst_stage(p);
  for (const LineItem& i : w.items) {
    switch (i.item) {
      case ItemId::params:
      case ItemId::params_frozen:
      case ItemId::params_nf4:
      case ItemId::params_nf4_constants:
      case ItemId::params_fp8:
        t.params += i.value;
        break;
      case ItemId::optimizer_m:
      case ItemId::optimizer_v:
      case ItemId::optimizer_state:
      case ItemId::master:
        t.optimizer += i.value;
        break;
      case ItemId::grads:
        if (in.training.framework == Framework::megatron) t.grads += i.value;
        break;
      case ItemId::overhead_cuda_context:
        t.context += i.value;
        break;
      case ItemId::overhead_nccl:
        t.nccl += i.value;
        break;
      default:
        break;
    }
  }
  return t;
}

LineItem bytes_item(ItemId id, std::string label, const Expr& e, const char* src,
                    Kind kind = Kind::estimated) {
  return make_item(id, std::move(label), Unit::bytes, e, src, kind);
}

LineItem copy_item(const StageMemory& w, ItemId id) {
  const LineItem* i = find_item(w.items, id);
  return i ? *i : LineItem{};
}

void close_phase(RlPhase& ph, double capacity) {
  ph.peak_bytes = 0;
  for (const LineItem& i : ph.items) ph.peak_bytes += i.value;
  ph.capacity_bytes = capacity;
  ph.fits = capacity <= 0 || ph.peak_bytes <= capacity;
}

}  // namespace

PlanInput rl_mean_input(const PlanInput& in) {
  PlanInput mean_in = in;
  mean_in.rl.enabled = false;
  mean_in.training.seq_len = std::max<std::int64_t>(
      1, std::llround(in.rl.mean_prompt_length + in.rl.mean_response_length));
  return mean_in;
}

RlResult compute_rl(const PlanResult& plan) {
  if (!plan.input.rl.enabled || plan.stages.empty()) return {};
  const PlanResult mean_plan = compute_plan(rl_mean_input(plan.input), PlanScope{true, false});
  return compute_rl(plan.input, plan, mean_plan);
}

RlResult compute_rl(const PlanInput& in, const PlanResult& plan, const PlanResult& mean_plan) {
  RlResult r;
  const RlSpec& rl = in.rl;
  if (!rl.enabled || plan.stages.empty()) return r;
  r.present = true;
  const ModelSpec& m = in.model;
  const ClusterSpec& c = in.cluster;
  const double capacity = static_cast<double>(c.gpu.memory_bytes);
  const bool split = rl.rollout() && rl.placement == RlPlacement::split;
  const int train_gpus = c.world_size();
  r.rollout_gpus = rl.rollout() ? (split ? rl.rollout_gpus : train_gpus) : 0;
  r.total_gpus = train_gpus + (split ? rl.rollout_gpus : 0);
  r.engines = rl.rollout() ? std::max(1, r.rollout_gpus / rl.rollout_tp) : 0;
  r.samples = static_cast<double>(rl.sequences());
  const double P = plan.derived.params;
  const double P_active = plan.derived.active_params;
  const double mean_len = rl.mean_prompt_length + rl.mean_response_length;
  const double max_len = static_cast<double>(rl.prompt_length + rl.response_length);
  r.tokens_per_step = r.samples * mean_len;

  const StageMemory& w = worst_stage(plan);
  const Trainer tr = trainer_state(in, plan);
  // The engine computes in 16 bits: bf16, or fp16 on GPUs without it (V100).
  const double peak16 = peak_of(c.gpu.peak_flops, DType::bf16) > 0
                            ? peak_of(c.gpu.peak_flops, DType::bf16)
                            : peak_of(c.gpu.peak_flops, DType::fp16);
  const double peak = peak16 * c.matmul_efficiency;
  // Decode reads at the engine's own share of the HBM rate (rl.decode_efficiency).
  const double hbm = c.gpu.memory_bandwidth * rl.decode_efficiency;

  // The trainer's state kept on a training GPU while the other roles run.
  const double kept_params = rl.offload_params && !split ? 0.0 : tr.params + tr.grads;
  const double kept_optimizer = rl.offload_optimizer && !split ? 0.0 : tr.optimizer;
  auto resident = [&](bool params_needed) {
    const double p = params_needed ? tr.params + tr.grads : kept_params;
    return bytes_item(ItemId::rl_trainer_resident, "trainer state kept (weights, optimizer)",
                      T("params", p, "B weights (and a kept gradient buffer)") +
                          T("optimizer", kept_optimizer, "B optimizer state and master weights"),
                      k_src_resident);
  };

  const double tp = in.parallel.tp, shard = in.parallel.zero >= 3 ? plan.derived.shard_group : 1;
  // A frozen model (reference, reward) in 16 bits, sharded like the actor: the dense part over
  // tp × pp, the routed experts over ep × etp × pp (the ledger's expert split), ZeRO-3 over
  // the shard group.
  const double experts_p = is_moe(m) ? moe_layers(m) * layer_params(m, true).expert_matrix : 0.0;
  const double pp = in.parallel.pp, ep = std::max(1, in.parallel.ep);
  const double etp = expert_tp(in.parallel);
  const Expr frozen_e = (T("dense_params", P - experts_p, "parameters outside the experts") /
                             T("tp_pp", tp * pp, "tp × pp") +
                         T("expert_params", experts_p, "routed experts' parameters") /
                             T("ep_etp_pp", ep * etp * pp, "ep × etp × pp")) *
                        Expr::constant(2) / T("shard", shard, "ZeRO-3 shards");
  const double frozen_b = frozen_e.value();
  const int frozen_models = (rl.reference ? 1 : 0) + (rl.reward_model ? 1 : 0);
  const bool frozen_resident = frozen_models > 0 && rl.frozen_weights == RlFrozen::resident;
  auto frozen_item = [&](int models, const char* label, ItemId id = ItemId::rl_reference_weights) {
    return bytes_item(
        id, label, T("copies", models, "copies of the actor's architecture") * frozen_e,
        "a frozen model of the actor's architecture in 16 bits, sharded like the actor "
        "(rl.frozen_weights: resident in every phase, or loaded for its pass)");
  };

  // --- The rollout engine.
  const double engine_weights_b = P * 2.0 / rl.rollout_tp;
  const double graphs_b = rl.cuda_graphs ? 1.0 * k_gib : 0.0;
  const double kv_tok = kv_per_token(m, rl.rollout_tp, dtype_bytes(rl.kv_dtype));
  r.kv_bytes_per_token = kv_tok;
  const double budget_b = rl.memory_fraction * capacity;
  const double ffn_local =
      static_cast<double>(
          is_moe(m) ? std::max<std::int64_t>(m.ffn, m.expert_ffn * m.experts_per_token) : m.ffn) /
      rl.rollout_tp;
  const Expr engine_act =
      T("max_batched_tokens", static_cast<double>(rl.max_batched_tokens), "tokens") *
          (Expr::constant(2) * T("ffn_local", ffn_local, "MLP width per rank") +
           Expr::constant(4) * T("hidden", m.hidden, "hidden")) *
          Expr::constant(2) +
      T("max_num_seqs", static_cast<double>(rl.max_num_seqs), "sequences") *
          T("vocab", m.vocab, "vocabulary") * Expr::constant(4);
  const bool sglang = rl.engine == RlEngine::sglang;
  const double kv_b =
      std::max(0.0, budget_b - engine_weights_b - (sglang ? 0.0 : engine_act.value()));
  r.kv_tokens = kv_tok > 0 ? kv_b / kv_tok : 0;
  if (rl.rollout()) {
    RlPhase ph;
    ph.name = "rollout";
    ph.pool = split ? "rollout" : "all";
    if (!split) ph.items.push_back(resident(false));
    LineItem ctx = copy_item(w, ItemId::overhead_cuda_context);
    if (ctx.id.empty())
      ctx =
          bytes_item(ItemId::overhead_cuda_context, "CUDA context and kernels",
                     T("cuda_context", c.cuda_context, "B"), "cluster.cuda_context", Kind::assumed);
    ph.items.push_back(ctx);
    if (!split && tr.nccl > 0) ph.items.push_back(copy_item(w, ItemId::overhead_nccl));
    ph.items.push_back(
        bytes_item(ItemId::rl_engine_weights, "engine weights (16-bit, per tensor-parallel rank)",
                   T("params", P, "parameters") * Expr::constant(2) /
                       T("rollout_tp", rl.rollout_tp, "engine tensor-parallel ranks"),
                   k_src_budget));
    ph.items.push_back(bytes_item(
        ItemId::rl_engine_activations,
        sglang ? "engine activations (beside its fraction)" : "engine activations (profiling run)",
        engine_act, k_src_engine_act));
    const Expr kv_e = sglang ? T("memory_fraction", rl.memory_fraction, "of the GPU") *
                                       T("capacity", capacity, "B") -
                                   T("engine_weights", engine_weights_b, "B")
                             : T("memory_fraction", rl.memory_fraction, "of the GPU") *
                                       T("capacity", capacity, "B") -
                                   T("engine_weights", engine_weights_b, "B") -
                                   T("engine_activations", engine_act.value(), "B");
    LineItem kv = bytes_item(ItemId::rl_kv_cache, "KV cache (what the engine's share leaves)", kv_e,
                             k_src_kv);
    kv.value = std::round(kv_b);  // bytes are whole; the formula's value when it is positive
    kv.source = std::string(k_src_budget) + ". " + k_src_kv;
    ph.items.push_back(kv);
    if (graphs_b > 0)
      ph.items.push_back(bytes_item(ItemId::rl_cuda_graphs, "CUDA-graph pool",
                                    T("graph_pool", graphs_b, "B"), k_src_graphs, Kind::assumed));
    if (frozen_resident && !split)
      ph.items.push_back(frozen_item(frozen_models, "frozen models' weights (reference, reward)"));
    close_phase(ph, capacity);
    const double engine_need = engine_weights_b + (sglang ? 0.0 : engine_act.value());
    if (budget_b < engine_need) {
      r.kv_fits = false;
      r.problem = fmt::format(
          "rollout: the engine's weights{} ({:.2f} GiB) exceed its share of the GPU, "
          "rl.memory_fraction {} × {:.2f} GiB = {:.2f} GiB; raise rl.memory_fraction or "
          "rl.rollout_tp",
          sglang ? "" : " and activations", engine_need / k_gib, rl.memory_fraction,
          capacity / k_gib, budget_b / k_gib);
    } else if (r.kv_tokens < max_len) {
      r.kv_fits = false;
      r.problem = fmt::format(
          "rollout: the KV cache holds {:.0f} tokens per engine, less than one sequence of "
          "rl.prompt_length + rl.response_length = {:.0f} (the engine refuses to start); raise "
          "rl.memory_fraction or rl.rollout_tp, or shorten the sequences",
          r.kv_tokens, max_len);
    }
    ph.fits = ph.fits && r.kv_fits;
    r.phases.push_back(std::move(ph));
  }

  // What a sleeping engine keeps while the trainer runs (colocated).
  auto asleep = [&]() {
    const double keep = rl.sleep == RlSleep::none ? budget_b + graphs_b : graphs_b;
    return bytes_item(ItemId::rl_engine_asleep,
                      rl.sleep == RlSleep::none ? "engine (not asleep: its whole share)"
                                                : "engine asleep (its CUDA-graph pool)",
                      T("engine_kept", keep, "B"), k_src_asleep, Kind::assumed);
  };
  const bool engine_here = rl.rollout() && !split;

  // --- Forward-only passes on the training layout (log-probs, reference, reward, values).
  const double mb = static_cast<double>(rl.log_prob_micro_batch);
  auto forward_phase = [&](std::string name, bool other_weights, double bytes_per_logit) {
    const Expr per_token = bytes_per_logit > 0
                               ? T("vocab", m.vocab, "vocabulary") /
                                         T("tp", tp, "tensor-parallel ranks") *
                                         T("bytes_per_logit", bytes_per_logit, "B per logit") +
                                     T("hidden", m.hidden, "hidden") * Expr::constant(16)
                               : T("hidden", m.hidden, "hidden") * Expr::constant(16);
    // The logits over the response only (logits_to_keep); the layer's activations over all.
    const double logit_tokens =
        rl.response_logits_only ? static_cast<double>(rl.response_length) : max_len;
    const Expr fwd_e =
        bytes_per_logit > 0 && rl.response_logits_only
            ? T("micro_batch", mb, "sequences") *
                  (T("response", logit_tokens, "tokens with logits") *
                       (T("vocab", m.vocab, "vocabulary") / T("tp", tp, "tensor-parallel ranks") *
                        T("bytes_per_logit", bytes_per_logit, "B per logit")) +
                   T("seq_len", max_len, "tokens") * T("hidden", m.hidden, "hidden") *
                       Expr::constant(16))
            : T("micro_batch", mb, "sequences") * T("seq_len", max_len, "tokens") * per_token;
    RlPhase ph;
    ph.name = std::move(name);
    ph.pool = split ? "training" : "all";
    ph.items.push_back(resident(true));
    if (frozen_resident)
      ph.items.push_back(frozen_item(frozen_models, "frozen models' weights (reference, reward)"));
    if (other_weights && ph.name == "values")
      ph.items.push_back(frozen_item(1, "the critic's weights (16-bit, sharded like the actor)",
                                     ItemId::rl_critic_weights));
    else if (other_weights && !frozen_resident && rl.frozen_weights == RlFrozen::offload)
      ph.items.push_back(frozen_item(1, "its weights (16-bit, loaded beside the actor's)"));
    ph.items.push_back(copy_item(w, ItemId::overhead_cuda_context));
    if (tr.nccl > 0) ph.items.push_back(copy_item(w, ItemId::overhead_nccl));
    if (engine_here) ph.items.push_back(asleep());
    ph.items.push_back(bytes_item(ItemId::rl_forward,
                                  bytes_per_logit > 0
                                      ? "forward working set (logits, one layer)"
                                      : "forward working set (one layer; a scalar head)",
                                  fwd_e, k_src_forward));
    close_phase(ph, capacity);
    r.phases.push_back(std::move(ph));
  };
  if (rl.rollout() && rl.old_log_probs)
    forward_phase("log-probs", false, rl.log_prob_entropy ? 6 : 2);
  if (rl.reference) forward_phase("reference", true, 2);
  if (rl.reward_model) forward_phase("reward", true, 0);
  if (rl.critic()) forward_phase("values", true, 0);

  // --- Training: the plan's own ledger, beside what the other roles keep.
  {
    RlPhase ph;
    ph.name = "training";
    ph.pool = split ? "training" : "all";
    ph.items = w.items;
    if (engine_here) ph.items.push_back(asleep());
    if (frozen_resident)
      ph.items.push_back(frozen_item(frozen_models, "frozen models' weights (reference, reward)"));
    if (rl.critic())
      ph.items.push_back(bytes_item(
          ItemId::rl_trainer_resident, "the critic's state kept (weights, optimizer)",
          T("params", kept_params, "B") + T("optimizer", kept_optimizer, "B"), k_src_resident));
    // The allocator's cache is what the GPU has left (src/core/overheads.cpp
    // fragmentation_item): beside what the other roles keep, it shrinks.
    double rest = 0;
    LineItem* frag = nullptr;
    for (LineItem& i : ph.items) {
      if (i.item == ItemId::overhead_fragmentation)
        frag = &i;
      else
        rest += i.value;
    }
    if (frag && capacity > 0 && frag->value + rest > capacity) {
      const Expr room = T("room", std::max(0.0, capacity - rest),
                          "B the GPU's memory leaves beside the rest of the phase");
      *frag = bytes_item(ItemId::overhead_fragmentation, frag->label,
                         Expr::min(T("reserve", frag->value, "B (the training ledger's)"), room),
                         frag->source.c_str(), Kind::assumed);
    }
    close_phase(ph, capacity);
    r.phases.push_back(std::move(ph));
  }

  // --- Weight sync (colocated: the engine's weights woken beside the trainer's).
  if (engine_here) {
    RlPhase ph;
    ph.name = "weight sync";
    ph.pool = "all";
    ph.items.push_back(resident(true));
    if (frozen_resident)
      ph.items.push_back(frozen_item(frozen_models, "frozen models' weights (reference, reward)"));
    ph.items.push_back(copy_item(w, ItemId::overhead_cuda_context));
    if (tr.nccl > 0) ph.items.push_back(copy_item(w, ItemId::overhead_nccl));
    ph.items.push_back(
        bytes_item(ItemId::rl_engine_weights, "engine weights (woken)",
                   T("params", P, "parameters") * Expr::constant(2) /
                       T("rollout_tp", rl.rollout_tp, "engine tensor-parallel ranks"),
                   k_src_sync));
    // FSDP gathers the fp32 parameter and casts it; Megatron's parameters are 16-bit already.
    const double gathered_b = in.training.framework == Framework::megatron ? 2.0 : 6.0;
    ph.items.push_back(bytes_item(
        ItemId::rl_sync_buffer, "sync buckets and the largest parameter gathered",
        Expr::constant(2) * T("sync_bucket", rl.sync_bucket, "B per bucket (trainer, engine)") +
            T("vocab", m.vocab, "vocabulary") * T("hidden", m.hidden, "hidden") *
                T("gathered_bytes", gathered_b, "B per element (gathered, cast)"),
        k_src_sync));
    if (graphs_b > 0)
      ph.items.push_back(bytes_item(ItemId::rl_cuda_graphs, "CUDA-graph pool",
                                    T("graph_pool", graphs_b, "B"), k_src_graphs, Kind::assumed));
    close_phase(ph, capacity);
    r.phases.push_back(std::move(ph));
  }

  // The worst phase: the least memory left.
  double least = 1e300;
  for (int i = 0; i < static_cast<int>(r.phases.size()); ++i) {
    const double left = r.phases[i].capacity_bytes - r.phases[i].peak_bytes;
    if (left < least) {
      least = left;
      r.worst = i;
    }
  }
  if (r.problem.empty())
    for (const RlPhase& ph : r.phases)
      if (!ph.fits) {
        r.problem = fmt::format("{}: {:.2f} GiB per GPU does not fit in {:.2f} GiB", ph.name,
                                ph.peak_bytes / k_gib, ph.capacity_bytes / k_gib);
        break;
      }

  // --- Host memory per node: the sleeping engine's weights and the trainer's offloaded state.
  if (engine_here) {
    double per_gpu = rl.sleep == RlSleep::offload ? engine_weights_b : 0.0;
    if (rl.offload_params) per_gpu += tr.params + tr.grads;
    if (rl.offload_optimizer) per_gpu += tr.optimizer;
    r.host_bytes = per_gpu * c.gpus_per_node;
  }
  // Frozen models waiting on the host (offload, swap; swap keeps the actor's there too).
  if (frozen_models > 0 && !frozen_resident)
    r.host_bytes += (frozen_models + (rl.frozen_weights == RlFrozen::swap ? 1 : 0)) * frozen_b *
                    c.gpus_per_node;

  const rl_detail::Shared shared{in,       split,    engine_here, train_gpus, P,
                                 P_active, mean_len, peak,        hbm,        engine_weights_b,
                                 kv_tok,   kv_b,     tr};
  rl_detail::add_step_time(shared, mean_plan, r);
  return r;
}

}  // namespace trainledger
