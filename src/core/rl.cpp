// RL post-training (docs/rl.md): the phases of one step around the actor's training. The
// actor trains with the plan's own layout (its ledger and step time are the plan's); a
// rollout engine generates the samples; the reference, reward model and critic run forward
// passes of the actor's architecture with its layout. Memory per GPU per phase, the step's
// time per phase, and the throughput as the RL frameworks publish it.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

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
    "a forward-only pass of one log-prob micro-batch: its logits in 16 bits, their fp32 copy "
    "and fp32 log-softmax (verl/utils/torch_functional.py logprobs_from_logits without the "
    "fused kernel), and one layer's activations (nothing is kept for backward)";
constexpr const char* k_src_asleep =
    "the engine while training runs: with sleep (vLLM sleep level 1: weights to host memory, KV "
    "cache freed; level 2: both freed) only its CUDA-graph pool stays; without sleep its whole "
    "budget does (vllm/device_allocator/cumem.py CuMemAllocator.sleep)";
constexpr const char* k_src_sync =
    "weight sync of the colocated engine: the engine's weights are woken before the trainer's "
    "are released, and the trainer gathers each parameter whole to load it "
    "(verl/workers/sharding_manager/fsdp_vllm.py: wake_up(tags=['weights']), then "
    "load_weights per tensor); the largest tensor (the embedding) is held gathered";
constexpr const char* k_src_prefill =
    "prefill: 2 × active parameters FLOPs per prompt token plus causal attention, on the "
    "engine's GPUs at the GEMM efficiency; the samples of one prompt share its prefill through "
    "prefix caching (vLLM's default in V1), so each prompt is prefilled once";
constexpr const char* k_src_decode =
    "decode: each engine step reads the weights (MoE: the experts its batch routes to) and the "
    "batch's KV cache from HBM and computes 2 × active parameters FLOPs per sequence; the step "
    "takes the longer of the two, plus two all-reduces per layer under tensor parallelism; an "
    "engine decodes its sequences at the concurrency its KV cache allows (at most "
    "max_num_seqs): mean length × sequences / concurrency steps, then the longest response's "
    "tail at a batch of one";
constexpr const char* k_src_forward_time =
    "a forward pass over the step's samples on the training layout: a third of the training "
    "step's compute and exposed communication per sequence (forward : backward = 1 : 2), at "
    "the mean lengths";
constexpr const char* k_src_train =
    "the plan's training step at the mean lengths (the samples packed without padding: verl "
    "use_dynamic_bsz), once per mini-batch and epoch";
constexpr const char* k_src_sync_time =
    "colocated: every parameter gathered whole in 16 bits over the training GPUs' links (FSDP "
    "full_tensor per parameter); split: the weights broadcast from the trainer to the engines "
    "over the network (verl recipe/one_step_off_policy, NeMo-RL: NCCL broadcast)";
constexpr const char* k_src_sleep_time =
    "host transfers over PCIe each step: the sleeping engine's weights out and back (sleep "
    "level 1), and the trainer state rl.offload_params / rl.offload_optimizer move";
constexpr const char* k_src_step =
    "on-policy: the phases one after another; split off-policy: generation of the next step "
    "overlaps the training of this one, so the step is the longer of the two plus the sync";
constexpr const char* k_src_tput =
    "tokens per second per GPU as verl reports it (perf/throughput: prompt and response tokens "
    "of the step over the step time and every GPU of the job)";

Expr T(std::string_view key, double value, std::string_view label) {
  return Expr::term(Text(key), value, Text(label));
}

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

struct Trainer {
  double params = 0;     // weights (every 16-bit, quantized or frozen copy)
  double optimizer = 0;  // optimizer state and master weights
  double grads = 0;      // kept between steps (Megatron's buffer) else 0
  double context = 0;
  double nccl = 0;
};

Trainer trainer_state(const PlanResult& p) {
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
        if (p.input.training.framework == Framework::megatron) t.grads += i.value;
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

RlResult compute_rl(const PlanResult& plan) {
  RlResult r;
  const PlanInput& in = plan.input;
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
  const Trainer tr = trainer_state(plan);
  // The engine computes in 16 bits: bf16, or fp16 on GPUs without it (V100).
  const double peak16 = peak_of(c.gpu.peak_flops, DType::bf16) > 0
                            ? peak_of(c.gpu.peak_flops, DType::bf16)
                            : peak_of(c.gpu.peak_flops, DType::fp16);
  const double peak = peak16 * c.matmul_efficiency;
  const double hbm = c.gpu.memory_bandwidth * c.memory_efficiency;

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
  const double tp = in.parallel.tp, shard = in.parallel.zero >= 3 ? plan.derived.shard_group : 1;
  const double mb = static_cast<double>(rl.log_prob_micro_batch);
  const Expr fwd_e = T("micro_batch", mb, "sequences") * T("seq_len", max_len, "tokens") *
                     (T("vocab", m.vocab, "vocabulary") / T("tp", tp, "tensor-parallel ranks") *
                          Expr::constant(10) +
                      T("hidden", m.hidden, "hidden") * Expr::constant(16));
  auto forward_phase = [&](std::string name, bool other_weights) {
    RlPhase ph;
    ph.name = std::move(name);
    ph.pool = split ? "training" : "all";
    ph.items.push_back(resident(true));
    if (other_weights) {
      ph.items.push_back(
          bytes_item(ItemId::rl_reference_weights, "its weights (16-bit, the actor's sharding)",
                     T("params", P, "parameters") * Expr::constant(2) /
                         T("shards", tp * in.parallel.pp * shard, "ranks sharing them"),
                     "a frozen copy of the actor's architecture, sharded like the actor"));
    }
    ph.items.push_back(copy_item(w, ItemId::overhead_cuda_context));
    if (tr.nccl > 0) ph.items.push_back(copy_item(w, ItemId::overhead_nccl));
    if (engine_here) ph.items.push_back(asleep());
    ph.items.push_back(bytes_item(ItemId::rl_forward, "forward working set (logits, one layer)",
                                  fwd_e, k_src_forward));
    close_phase(ph, capacity);
    r.phases.push_back(std::move(ph));
  };
  if (rl.rollout()) forward_phase("log-probs", false);
  if (rl.reference) forward_phase("reference", true);
  if (rl.reward_model) forward_phase("reward", true);
  if (rl.critic()) forward_phase("values", true);

  // --- Training: the plan's own ledger, beside what the other roles keep.
  {
    RlPhase ph;
    ph.name = "training";
    ph.pool = split ? "training" : "all";
    ph.items = w.items;
    if (engine_here) ph.items.push_back(asleep());
    if (rl.critic())
      ph.items.push_back(bytes_item(
          ItemId::rl_trainer_resident, "the critic's state kept (weights, optimizer)",
          T("params", kept_params, "B") + T("optimizer", kept_optimizer, "B"), k_src_resident));
    close_phase(ph, capacity);
    r.phases.push_back(std::move(ph));
  }

  // --- Weight sync (colocated: the engine's weights woken beside the trainer's).
  if (engine_here) {
    RlPhase ph;
    ph.name = "weight sync";
    ph.pool = "all";
    ph.items.push_back(resident(true));
    ph.items.push_back(copy_item(w, ItemId::overhead_cuda_context));
    if (tr.nccl > 0) ph.items.push_back(copy_item(w, ItemId::overhead_nccl));
    ph.items.push_back(
        bytes_item(ItemId::rl_engine_weights, "engine weights (woken)",
                   T("params", P, "parameters") * Expr::constant(2) /
                       T("rollout_tp", rl.rollout_tp, "engine tensor-parallel ranks"),
                   k_src_sync));
    ph.items.push_back(bytes_item(
        ItemId::rl_sync_buffer, "largest parameter gathered whole",
        T("vocab", m.vocab, "vocabulary") * T("hidden", m.hidden, "hidden") * Expr::constant(2),
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

  // --- Time per phase.
  PlanInput mean_in = in;
  mean_in.rl.enabled = false;
  mean_in.training.seq_len = std::max<std::int64_t>(1, std::llround(mean_len));
  const PlanResult pm = compute_plan(mean_in, PlanScope{true, false});
  const double t_step = value_of(pm.time, ItemId::time_step);
  const double t_fwd_all =
      (value_of(pm.time, ItemId::time_compute) + value_of(pm.time, ItemId::time_comm_exposed) +
       value_of(pm.time, ItemId::time_host)) /
      3.0;
  const double gb = static_cast<double>(std::max<std::int64_t>(1, pm.derived.global_batch));
  auto time_item = [&](ItemId id, std::string label, const Expr& e, const char* src) {
    r.time.push_back(make_item(id, std::move(label), Unit::seconds, e, src));
    return r.time.back().value;
  };
  double rollout_s = 0, train_side_s = 0, sync_s = 0, other_s = 0;
  if (rl.rollout() && peak > 0 && hbm > 0) {
    const double E = r.engines;
    const double heads_dim = static_cast<double>(m.heads) * head_dim(m);
    const double pf_tokens = static_cast<double>(rl.prompts) * rl.mean_prompt_length / E;
    const Expr pf =
        (Expr::constant(2) * T("active_params", P_active, "active parameters") +
         Expr::constant(2) * T("layers", m.layers, "layers") *
             T("mean_prompt", rl.mean_prompt_length, "tokens") *
             T("attn_width", heads_dim, "heads × head size")) *
        T("prompt_tokens", pf_tokens, "prompt tokens per engine") /
        (T("rollout_tp", rl.rollout_tp, "GPUs per engine") * T("gemm_rate", peak, "FLOP/s"));
    rollout_s +=
        time_item(ItemId::rl_time_prefill, "prefill (prompts, once per prompt)", pf, k_src_prefill);
    // Decode: concurrency from the KV cache, steps at that batch, then the tail.
    const double seqs = std::ceil(r.samples / E);
    const double ctx = rl.mean_prompt_length + rl.mean_response_length / 2.0;
    const double by_kv =
        kv_tok > 0 ? std::floor(kv_b / (kv_tok * (rl.mean_prompt_length + rl.mean_response_length)))
                   : 0;
    r.concurrency = std::max(1.0, std::min({static_cast<double>(rl.max_num_seqs), seqs, by_kv}));
    auto step_time = [&](double batch) {
      double weights = P * 2.0;
      if (is_moe(m) && m.experts > 0) {
        const double routed_share =
            std::min(1.0, batch * m.experts_per_token / static_cast<double>(m.experts));
        const double inactive = P - P_active;  // experts a token does not route to
        weights = (P_active + inactive * routed_share) * 2.0;
      }
      const double bytes = weights / rl.rollout_tp + batch * ctx * kv_tok;
      const double flops = (2.0 * P_active + 4.0 * m.layers * ctx * heads_dim) * batch;
      double t = std::max(bytes / hbm, flops / (rl.rollout_tp * peak));
      if (rl.rollout_tp > 1)
        t +=
            2.0 * m.layers *
            (c.intra_node_latency + batch * m.hidden * 2.0 / std::max(1.0, c.intra_node_bandwidth));
      if (!rl.cuda_graphs) t += m.layers * 12.0 * c.launch_overhead;
      return t;
    };
    const double full_steps = seqs * rl.mean_response_length / r.concurrency;
    const double tail_steps =
        std::max(0.0, static_cast<double>(rl.response_length) - rl.mean_response_length);
    const Expr dec = T("full_steps", full_steps, "steps at full batch") *
                         T("step_full", step_time(r.concurrency), "s per step") +
                     T("tail_steps", tail_steps, "steps of the longest response") *
                         T("step_one", step_time(1), "s per step");
    rollout_s +=
        time_item(ItemId::rl_time_decode,
                  fmt::format("decode ({:.0f} sequences at once per engine)", r.concurrency), dec,
                  k_src_decode);
  }
  auto forward_time = [&](ItemId id, std::string label) {
    const Expr e = T("forward_per_sequence", t_fwd_all / gb, "s per sequence") *
                   T("samples", r.samples, "sequences");
    return time_item(id, std::move(label), e, k_src_forward_time);
  };
  if (rl.rollout()) train_side_s += forward_time(ItemId::rl_time_log_probs, "actor log-probs");
  if (rl.reference) train_side_s += forward_time(ItemId::rl_time_reference, "reference log-probs");
  if (rl.reward_model) train_side_s += forward_time(ItemId::rl_time_reward, "reward model");
  if (rl.critic()) train_side_s += forward_time(ItemId::rl_time_values, "critic values");
  const double optimizer_steps =
      static_cast<double>(rl.prompts / std::max<std::int64_t>(1, rl.mini_batch_prompts)) *
      rl.epochs;
  const Expr train_e = T("optimizer_steps", optimizer_steps, "mini-batches × epochs") *
                       T("train_step", t_step, "s per optimizer step");
  train_side_s += time_item(ItemId::rl_time_training, "actor training", train_e, k_src_train);
  if (rl.critic())
    train_side_s +=
        time_item(ItemId::rl_time_critic_training, "critic training", train_e, k_src_train);
  if (rl.rollout()) {
    const bool one_node = train_gpus <= c.gpus_per_node;
    const double link = split || !one_node ? c.inter_node_bandwidth : c.intra_node_bandwidth;
    if (link > 0)
      sync_s = time_item(
          ItemId::rl_time_weight_sync, "weight sync",
          T("params", P, "parameters") * Expr::constant(2) /
              T("link", link,
                split || !one_node ? "B/s per GPU across nodes" : "B/s per GPU in a node"),
          k_src_sync_time);
    if (engine_here && c.pcie_bandwidth > 0) {
      double moved = rl.sleep == RlSleep::offload ? engine_weights_b : 0.0;
      if (rl.offload_params) moved += tr.params + tr.grads;
      if (rl.offload_optimizer) moved += tr.optimizer;
      if (moved > 0)
        other_s = time_item(
            ItemId::rl_time_sleep_wake, "sleep and wake (host transfers)",
            Expr::constant(2) * T("moved", moved, "B per GPU") / T("pcie", c.pcie_bandwidth, "B/s"),
            k_src_sleep_time);
    }
  }
  double step = 0;
  if (split && rl.off_policy)
    step = std::max(rollout_s, train_side_s) + sync_s + other_s;
  else
    step = rollout_s + train_side_s + sync_s + other_s;
  r.time.push_back(make_item(ItemId::rl_time_step, "time per RL step", Unit::seconds,
                             T("step", step, "s"), k_src_step));
  if (step > 0) {
    r.time.push_back(
        make_item(ItemId::rl_tokens_per_s_per_gpu, "tokens per second per GPU", Unit::tokens_per_s,
                  T("tokens", r.tokens_per_step, "prompt and response tokens per step") /
                      (T("step", step, "s") * T("gpus", r.total_gpus, "GPUs")),
                  k_src_tput));
    if (split) {
      r.time.push_back(make_item(
          ItemId::rl_rollout_idle, "idle share of the rollout GPUs", Unit::fraction,
          Expr::constant(1) - T("rollout", rollout_s, "s") / T("step", step, "s"), k_src_step));
      r.time.push_back(make_item(
          ItemId::rl_training_idle, "idle share of the training GPUs", Unit::fraction,
          Expr::constant(1) - T("training", train_side_s, "s") / T("step", step, "s"), k_src_step));
    }
  }
  const LineItem* mfu = find_item(pm.time, ItemId::mfu);
  if (mfu)
    r.time.push_back(make_item(ItemId::rl_training_mfu, "MFU of the training phase", Unit::fraction,
                               T("mfu", mfu->value, "of the peak"),
                               "the plan's MFU at the mean lengths"));
  return r;
}

}  // namespace trainledger
