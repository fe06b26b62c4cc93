// The time of one RL step per phase (docs/rl.md#step-time): prefill and decode on the engines,
// forward passes and training on the training layout, weight sync and host transfers; the
// step, the throughput as the RL frameworks publish it, the idle share of each pool.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "collectives.hpp"
#include "rl_parts.hpp"

namespace trainledger::rl_detail {

namespace {

constexpr const char* k_src_prefill =
    "prefill: 2 × active parameters FLOPs per prompt token plus causal attention, on the "
    "engine's GPUs at the GEMM efficiency; the samples of one prompt share its prefill through "
    "prefix caching (vLLM's default in V1), so each prompt is prefilled once";
constexpr const char* k_src_decode =
    "decode: each engine step reads the weights (MoE: the experts its batch routes to) and the "
    "batch's KV cache from HBM and computes 2 × active parameters FLOPs per sequence; the step "
    "takes the longer of the two, plus two all-reduces per layer under tensor parallelism (in "
    "a node vLLM's one-shot custom all-reduce; across nodes NCCL's faster of ring and tree); an "
    "engine decodes its sequences at the concurrency its KV cache allows (at most "
    "max_num_seqs): mean length × sequences / concurrency steps, then the longest response's "
    "tail at a batch of one; without async scheduling each step also waits for the engine's "
    "host work (rl.step_overhead: vLLM RFC #6854); DAPO's dynamic sampling repeats it "
    "rl.generation_rounds times";
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
    "(verl recipe/one_step_off_policy, NeMo-RL: NCCL broadcast); over NVLink when every GPU "
    "involved shares one NVLink domain, else over the network";
constexpr const char* k_src_sleep_time =
    "host transfers each step, out and back: the sleeping engine's weights through pinned "
    "memory (vLLM sleep level 1), and the trainer state rl.offload_params / "
    "rl.offload_optimizer move, through pinned buffers at cluster.pcie_bandwidth or through "
    "pageable memory at cluster.pageable_bandwidth (rl.offload_copy: tensor.to(\"cpu\") per "
    "tensor, blocking; verl fsdp_utils offload_fsdp_optimizer, NeMo-RL move_optimizer)";
constexpr const char* k_src_step =
    "on-policy: the phases one after another; split off-policy: generation of the next step "
    "overlaps the training of this one, so the step is the longer of the two plus the sync";
constexpr const char* k_src_tput =
    "tokens per second per GPU as verl reports it (perf/throughput: prompt and response tokens "
    "of the step over the step time and every GPU of the job)";

// The step's parts in the order the frameworks run them (verl's ray_trainer fit loop,
// NeMo-RL's grpo_train): colocated, the weights go to the waking engine, it generates, the
// training side scores and trains, the host transfers close the step; split, the training
// pool waits for the samples (on-policy) or trains on the last step's while the engines
// generate the next (off-policy), and the weight sync follows on both pools.
void add_timeline(bool split, bool off_policy, double rollout_s, double train_side_s, RlResult& r) {
  constexpr ItemId k_rollout[] = {ItemId::rl_time_prefill, ItemId::rl_time_decode};
  constexpr ItemId k_train[] = {ItemId::rl_time_log_probs, ItemId::rl_time_reference,
                                ItemId::rl_time_reward,    ItemId::rl_time_values,
                                ItemId::rl_time_training,  ItemId::rl_time_critic_training};
  const LineItem* sync = find_item(r.time, ItemId::rl_time_weight_sync);
  const LineItem* other = find_item(r.time, ItemId::rl_time_sleep_wake);
  // Off-policy, the longer pool's work is what the step waits for.
  const bool rollout_exposed = !off_policy || rollout_s >= train_side_s;
  const bool train_exposed = !off_policy || rollout_s < train_side_s;
  auto lay = [&](const ItemId* ids, std::size_t n, const char* lane, double at, bool exposed,
                 bool next) {
    for (std::size_t k = 0; k < n; ++k) {
      const LineItem* i = find_item(r.time, ids[k]);
      if (!i || !(i->value > 0)) continue;
      r.timeline.push_back({ids[k], lane, at, at + i->value, exposed ? i->value : 0.0, next});
      at += i->value;
    }
    return at;
  };
  auto one = [&](const LineItem* i, const char* lane, double at, bool exposed) {
    if (!i || !(i->value > 0)) return at;
    r.timeline.push_back({i->item, lane, at, at + i->value, exposed ? i->value : 0.0, false});
    return at + i->value;
  };
  if (!split) {
    double at = one(sync, "all", 0, true);
    at = lay(k_rollout, std::size(k_rollout), "all", at, true, false);
    at = lay(k_train, std::size(k_train), "all", at, true, false);
    one(other, "all", at, true);
    return;
  }
  const double generated =
      lay(k_rollout, std::size(k_rollout), "rollout", 0, rollout_exposed, off_policy);
  const double trained = lay(k_train, std::size(k_train), "training", off_policy ? 0 : generated,
                             train_exposed, false);
  const double synced = std::max(generated, trained);
  one(sync, "rollout", synced, false);  // the same transfer, counted once: on the trainers
  const double at = one(sync, "training", synced, true);
  one(other, "training", at, true);
}

}  // namespace

void add_step_time(const Shared& s, const PlanResult& pm, RlResult& r) {
  const PlanInput& in = s.in;
  const RlSpec& rl = in.rl;
  const ModelSpec& m = in.model;
  const ClusterSpec& c = in.cluster;
  const double P = s.params, P_active = s.active_params;
  const double peak = s.peak, hbm = s.hbm, kv_tok = s.kv_tok, kv_b = s.kv_b;
  const bool split = s.split, engine_here = s.engine_here;
  const int train_gpus = s.train_gpus;
  const double engine_weights_b = s.engine_weights_b;
  const Trainer& tr = s.trainer;
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
        (T("rollout_tp", rl.rollout_tp, "GPUs per engine") * T("gemm_rate", peak, "FLOP/s")) *
        T("rounds", rl.generation_rounds, "generation rounds (rl.generation_rounds)");
    rollout_s +=
        time_item(ItemId::rl_time_prefill, "prefill (prompts, once per prompt)", pf, k_src_prefill);
    // One all-reduce of the engine's tensor-parallel group. Inside a node vLLM's custom
    // all-reduce (vllm/distributed/device_communicators/custom_all_reduce.py, one-shot for
    // small messages: one latency step); a group across nodes falls back to NCCL
    // (cuda_communicator.py: the custom all-reduce needs every rank in one node), whose tuner
    // picks the faster of ring and tree (src/graph/tuning.cc), over NVLink inside an NVLink
    // domain of several trays (cluster.nvlink_domain) and over the network beyond it. Unlike the
    // plan's collectives (nccl_calls_time) a tree counts inside a domain too: its 2⌈log₂ n⌉
    // steps stand in for NCCL's NVLS and low-latency paths over NVLink (docs/rl.md).
    const bool engine_across_nodes = rl.rollout_tp > c.gpus_per_node;
    Group engine_tp;
    engine_tp.name = "rollout_tp";
    engine_tp = regroup(in, engine_tp, rl.rollout_tp, 1);
    auto engine_all_reduce = [&](double message) {
      if (!engine_across_nodes)
        return c.intra_node_latency + message / std::max(1.0, c.intra_node_bandwidth);
      const Num msg = Num::constant(message), one = Num::constant(1);
      return std::min(calls_time(in, CollKind::all_reduce, engine_tp, msg, one).value(),
                      calls_time(in, CollKind::tree_all_reduce, engine_tp, msg, one).value());
    };
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
      if (rl.rollout_tp > 1) t += 2.0 * m.layers * engine_all_reduce(batch * m.hidden * 2.0);
      if (!rl.cuda_graphs) t += m.layers * 12.0 * c.launch_overhead;
      return t;
    };
    const double full_steps = seqs * rl.mean_response_length / r.concurrency;
    const double tail_steps =
        std::max(0.0, static_cast<double>(rl.response_length) - rl.mean_response_length);
    Expr dec = T("full_steps", full_steps, "steps at full batch") *
                   T("step_full", step_time(r.concurrency), "s per step on the GPU") +
               T("tail_steps", tail_steps, "steps of the longest response") *
                   T("step_one", step_time(1), "s per step on the GPU");
    if (!rl.async_scheduling && rl.step_overhead > 0)
      dec = dec +
            T("steps", full_steps + tail_steps, "engine steps") *
                T("step_overhead", rl.step_overhead, "s of host time per step (rl.step_overhead)");
    if (rl.generation_rounds != 1)
      dec = T("rounds", rl.generation_rounds, "generation rounds (rl.generation_rounds)") * dec;
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
  if (rl.rollout() && rl.old_log_probs)
    train_side_s += forward_time(ItemId::rl_time_log_probs, "actor log-probs");
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
    // Over NVLink when every GPU the sync touches shares one NVLink domain (a node, or an
    // NVL72 rack: cluster.nvlink_domain), else over the network. The domain is the whole
    // job's: split, the rollout pool's nodes (whole nodes, as the launcher places them) join
    // the training nodes, so two pools in one rack sync over NVLink.
    const int touched = split ? train_gpus + rl.rollout_gpus : train_gpus;
    ClusterSpec job = c;
    if (split && c.gpus_per_node > 0)
      job.nodes = c.nodes + (rl.rollout_gpus + c.gpus_per_node - 1) / c.gpus_per_node;
    const bool one_domain = touched <= job.domain();
    const double link = one_domain ? c.intra_node_bandwidth : c.inter_node_bandwidth;
    if (link > 0)
      sync_s = time_item(
          ItemId::rl_time_weight_sync, "weight sync",
          T("params", P, "parameters") * Expr::constant(2) /
              T("link", link,
                one_domain ? "B/s per GPU inside one NVLink domain" : "B/s per GPU across nodes"),
          k_src_sync_time);
    if (engine_here && c.pcie_bandwidth > 0 && c.pageable_bandwidth > 0) {
      // The engine's weights go through pinned memory (vLLM's CuMemAllocator); the trainer's
      // state as rl.offload_copy says.
      double pinned = rl.sleep == RlSleep::offload ? engine_weights_b : 0.0;
      double pageable = 0;
      if (rl.offload_params)
        (rl.offload_copy == RlOffloadCopy::pageable ? pageable : pinned) += tr.params + tr.grads;
      if (rl.offload_optimizer)
        (rl.offload_copy == RlOffloadCopy::pinned ? pinned : pageable) += tr.optimizer;
      std::optional<Expr> e;
      const auto add = [&](Expr x) { e = e ? *e + x : std::move(x); };
      if (pinned > 0)
        add(T("pinned", pinned, "B per GPU through pinned memory") /
            T("pcie", c.pcie_bandwidth, "B/s (cluster.pcie_bandwidth)"));
      if (pageable > 0)
        add(T("pageable", pageable, "B per GPU through pageable memory") /
            T("pageable_rate", c.pageable_bandwidth, "B/s (cluster.pageable_bandwidth)"));
      if (e)
        other_s = time_item(ItemId::rl_time_sleep_wake, "sleep and wake (host transfers)",
                            Expr::constant(2) * *e, k_src_sleep_time);
    }
  }
  double step = 0;
  if (split && rl.off_policy)
    step = std::max(rollout_s, train_side_s) + sync_s + other_s;
  else
    step = rollout_s + train_side_s + sync_s + other_s;
  add_timeline(split, split && rl.off_policy, rollout_s, train_side_s, r);
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
}

}  // namespace trainledger::rl_detail
