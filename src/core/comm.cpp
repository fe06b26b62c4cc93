// Communication per optimizer step, per GPU (docs/formulas.md#communication).
#include <algorithm>
#include <cmath>

#include "activations.hpp"
#include "collectives.hpp"
#include "formula.hpp"
#include "stage_params.hpp"
#include "state.hpp"
#include "timing.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_dp =
    "Rajbhandari et al. 2020, ZeRO §7.2.1: DDP all-reduce 2(n−1)/n·S; ZeRO-1/2 reduce-scatter "
    "+ all-gather, the same volume; ZeRO-3 1.5× (gathers in forward and backward); FSDP2 HSDP "
    "adds an all-reduce of the shard across replicas; MoE experts are reduced over their "
    "expert-data-parallel group, dp × cp / ep ranks (Megatron-Core parallel_state)";
constexpr const char* k_src_tp =
    "Shoeybi et al. 2019 §3 and Korthikanti et al. 2022 §4.2.2: 2 all-reduces per layer in "
    "forward, 2 in backward (2 more under full recompute); with sequence parallelism each is an "
    "all-gather + reduce-scatter of the same bytes";
constexpr const char* k_src_pp =
    "Narayanan et al. 2021 §2.2: each micro-batch crosses every stage boundary forward "
    "(activations) and backward (their gradients)";
constexpr const char* k_src_cp =
    "Liu et al. 2023 (Ring Attention): each rank passes its K/V block around the ring, cp − 1 "
    "steps per layer in forward, K/V and their gradients in backward; once more per layer "
    "under full recompute";
constexpr const char* k_src_ep =
    "Lepikhin et al. 2020 (GShard), Megatron-Core MoE: all-to-all dispatch and combine per MoE "
    "layer, forward and backward, and again in a fully recomputed forward";

template <typename V>
struct Builder {
  explicit Builder(const PlanInput& plan) : in(&plan) {}
  const PlanInput* in;
  V volume = V::term("none", 0, "B");
  V time = V::term("none", 0, "s");
  CommDim dim;
  bool any = false;
  std::vector<std::vector<Term>> call_inputs;  // per call of `dim` (the explained evaluation)

  void add(CollKind kind, const Group& g, double message_bytes, double calls_per_step,
           const Text& what, CommPhase phase = CommPhase::backward_sync) {
    const V msg = V::term("message_bytes", message_bytes, what.prefixed("B "));
    const V n = V::term("calls", calls_per_step, "calls");
    const TimedCall<V> call = nccl_calls_time(*in, kind, g, msg, n);
    const V v = (n * call_volume(call.kind, g.size, msg)).note(call_name(call.kind, call.algo));
    const V& t = call.time;
    // A link with no bandwidth: the traffic is known, its time is not (a latency-only time
    // would pass for a measurement).
    const double bw =
        g.link.inter_node ? in->cluster.inter_node_bandwidth : in->cluster.intra_node_bandwidth;
    if (g.size > 1 && bw <= 0) dim.timed = false;
    volume = any ? volume + v : v;
    time = any ? time + t : t;
    any = true;
    if (dim.n_calls < static_cast<int>(dim.calls.size())) {
      dim.calls[dim.n_calls++] =
          CollCall{call.kind,         g.size,    message_bytes, calls_per_step,
                   g.link.inter_node, t.value(), phase,         call.algo};
      if constexpr (V::explained) {
        std::vector<Term> keys;
        for (const Term& term : t.terms()) {
          bool seen = term.input.empty();
          for (const Term& k : keys) seen = seen || k.input == term.input;
          if (!seen) keys.push_back(term);
        }
        call_inputs.push_back(std::move(keys));
      }
    }
  }

  // Records the dimension's typed result and its report item. `units`: the buckets or
  // gathered units each pass's traffic comes in.
  template <typename L>
  void emit(Dim d, ItemId id, L&& label, const char* source, double units, Comm<V>& out) {
    if (!any) return;
    const auto item = make(id, std::forward<L>(label), Unit::bytes, volume, source);
    dim.dim = d;
    dim.present = true;
    dim.bytes = item.value;
    dim.time_s = dim.timed ? time.value() : 0;
    for (int i = 0; i < dim.n_calls && dim.timed; ++i) {
      const CollCall& c = dim.calls[i];
      switch (c.phase) {
        case CommPhase::forward:
          dim.forward_s += c.time_s;
          break;
        case CommPhase::backward:
          dim.backward_s += c.time_s;
          break;
        case CommPhase::backward_sync:
          dim.sync_s += c.time_s;
          break;
        case CommPhase::after_step:
          dim.tail_s += c.time_s;
          break;
      }
    }
    dim.units = std::max(1.0, units);
    out.dims[d] = dim;
    out.items.push_back(item);
    if constexpr (V::explained) {
      LineItem& li = out.items.back();
      if (dim.timed) {
        li.time_s = time.value();
        li.time_formula = time.text();
      }
      for (int i = 0; i < dim.n_calls; ++i) {
        const CollCall& c = dim.calls[i];
        li.collectives.push_back(Collective{
            call_name(c.kind, c.algo), std::string(to_string(c.algo)), c.group_size,
            c.message_bytes, c.calls_per_step, c.inter_node ? "inter-node" : "intra-node",
            call_inputs[static_cast<std::size_t>(i)]});
      }
    }
  }
};

double grad_syncs(const PlanInput& in, const Derived& d) {
  return in.parallel.grad_sync == GradSync::every_micro_batch ? static_cast<double>(d.grad_accum)
                                                              : 1.0;
}

// Parameters synchronized over one data-parallel group: the dense ones over dp × cp, the
// experts over their expert-data-parallel group tp × dp × cp / (etp × ep) (Megatron-Core's
// expert_data_parallel group; ZeRO shards them over the same ranks).
struct SyncSet {
  double trainable = 0;  // parameters that receive gradients, local to this GPU
  Group group;           // replicas holding the same parameters
  Group shard_group;     // ZeRO/FSDP shard ranks within the group (its link: the ranks' span)
  int shard = 1;
  std::string_view what;    // "" or "expert "
  double matrix_share = 0;  // GEMM weights among `trainable` (FP8 all-gather)
};

template <typename V>
void add_sync(const PlanInput& in, const Derived& d, const SyncSet& set, int layers, Builder<V>& b,
              double& units) {
  const ParallelSpec& p = in.parallel;
  const double grad_bytes = set.trainable * dtype_bytes(in.training.reduce_dtype);
  const double param_bytes_local = set.trainable * param_bytes(in.training);
  // What ZeRO-3 gathers: the same weights, the GEMM ones in FP8 with fp8_all_gather.
  const double gathered_local = set.trainable * gathered_bytes(in, set.matrix_share);
  const double syncs = grad_syncs(in, d);
  const double m = static_cast<double>(d.grad_accum);
  const CollKind ar =
      p.nccl_algo == NcclAlgo::tree ? CollKind::tree_all_reduce : CollKind::all_reduce;
  const int replicas = set.group.size;
  const Group& shard_group = set.shard_group;
  const double buckets = std::max(1.0, std::ceil(grad_bytes / p.bucket_size));
  const std::string_view ex = set.what;
  // DDP and ZeRO-1/2 reduce bucket by bucket; ZeRO-3 gathers and reduces unit by unit.
  units = buckets;
  if (p.zero == 0) {
    b.add(ar, set.group, grad_bytes / buckets, buckets * syncs, Text(ex, "gradient bucket"));
  } else if (p.zero <= 2) {
    if (set.shard > 1) {
      b.add(CollKind::reduce_scatter, shard_group, grad_bytes / buckets, buckets * syncs,
            Text(ex, "gradient bucket"));
      // The updated parameters are gathered after the optimizer step.
      // With fp8_param_gather the GEMM weights are gathered in FP8 (Megatron-LM
      // --fp8-param-gather: the distributed optimizer's buffers hold FP8 parameters).
      b.add(CollKind::all_gather, shard_group,
            p.fp8_param_gather ? gathered_local : param_bytes_local, 1,
            Text(ex, "updated parameters"), CommPhase::after_step);
    }
  } else if (set.shard > 1) {
    // FSDP gathers and reduces one wrapped unit at a time: every layer, and the root.
    units = std::max(1, layers) + 1.0;
    // PyTorch's pipelining keeps an FSDP2 stage unsharded after every backward but the last
    // (torch/distributed/pipelining/stage.py backward_maybe_with_nosync:
    // set_reshard_after_backward(False) with set_requires_gradient_sync(False)); without
    // resharding after forward either, each unit is gathered once per step, not per micro-batch.
    const Framework f = in.training.framework;
    const bool gathered_once = (f == Framework::pytorch || f == Framework::hf) && p.pp > 1 &&
                               !p.reshard_after_forward &&
                               p.grad_sync == GradSync::last_micro_batch;
    b.add(CollKind::all_gather, shard_group, gathered_local / units,
          (gathered_once ? 1 : m) * units,
          Text(ex, gathered_once ? "parameters of one unit (once per step: kept gathered)"
                                 : "parameters of one unit (forward)"),
          CommPhase::forward);
    if (p.reshard_after_forward)
      b.add(CollKind::all_gather, shard_group, gathered_local / units, m * units,
            Text(ex, "parameters of one unit (backward)"), CommPhase::backward);
    b.add(CollKind::reduce_scatter, shard_group, grad_bytes / units, syncs * units,
          Text(ex, "gradients of one unit"));
  }
  if (p.zero > 0 && set.shard < replicas) {
    // HSDP: the shard's gradients are averaged across the replicas once per step.
    const Group rep = regroup(in, set.group, replicas / set.shard, set.group.stride * set.shard);
    b.add(ar, rep, grad_bytes / set.shard, 1, Text(ex, "gradient shard across replicas"));
  }
}

template <typename V>
void dp_items(const PlanInput& in, const Derived& d, const StageParams& sp, int layers,
              Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  const int replicas = p.dp * p.cp;
  const bool full = in.training.finetune == Finetune::full;
  // Experts split otherwise than the dense weights (ep > 1, or etp other than tp) are
  // synchronized over their own expert-data-parallel group; otherwise with the dense ones.
  const bool split = (p.ep > 1 || expert_tp(p) != p.tp) && sp.expert > 0 && full;
  const int expert_replicas = expert_dp(p);
  if (replicas <= 1 && !(split && expert_replicas > 1)) return;
  const double share = d.params > 0 ? d.trainable_params / d.params : 1.0;
  const int shard = p.zero > 0 && p.zero_shard_size > 0 ? p.zero_shard_size : replicas;
  const Group whole = group_of(in, "dp", replicas);
  Group shard_group = group_of(in, "dp", shard);
  shard_group.name = "dp_shard";
  Builder<V> b(in);
  double units = 1;
  const double dense = full ? (split ? sp.dense : sp.total()) * share : sp.adapters;
  const double matrix_share = sp.total() > 0 ? sp.matrix / sp.total() : 0;
  if (replicas > 1)
    add_sync<V>(in, d, SyncSet{dense, whole, shard_group, shard, "", matrix_share}, layers, b,
                units);
  if (split && expert_replicas > 1) {
    // Megatron-Core's expert_data_parallel group: tp × cp × dp / (etp × ep) ranks, outside ep
    // in the expert rank order (collectives.cpp expert_stride).
    const Group experts = group_of(in, "dp_expert", expert_replicas);
    // The experts' shards: the dense shard group's ranks times tp over etp × ep.
    const long long expert_shard =
        static_cast<long long>(shard) * p.tp / (static_cast<long long>(expert_tp(p)) * p.ep);
    Group expert_shards = regroup(
        in, experts, static_cast<int>(std::clamp<long long>(expert_shard, 1, expert_replicas)),
        experts.stride);
    expert_shards.name = "dp_shard";
    double expert_units = 1;
    add_sync<V>(
        in, d,
        SyncSet{sp.expert * share, experts, expert_shards, expert_shards.size, "expert ", 1.0},
        layers, b, expert_units);
    if (replicas <= 1) units = expert_units;
  }
  auto label = [&] {
    return "data parallel (" + std::string(p.zero == 0 ? "DDP" : "ZeRO-" + std::to_string(p.zero)) +
           ")";
  };
  b.emit(Dim::dp, ItemId::comm_dp, label, k_src_dp, units, out);
}

// Layers whose forward runs twice under full recompute: their forward collectives repeat
// (Korthikanti et al. 2022 §4.2.2 for TP; the same holds for the CP ring and the EP
// all-to-alls inside the recomputed layer).
int full_recomputed_layers(const PlanInput& in, int layers) {
  return in.training.recompute == Recompute::full
             ? static_cast<int>(in.training.recompute_layers * layers + 0.5)
             : 0;
}

// Layers whose named modules selective recompute runs again (training.recompute_modules).
int selective_recomputed_layers(const PlanInput& in, int layers, RecomputeModule m) {
  return in.training.recompute == Recompute::selective &&
                 recomputes(in.training.recompute_modules, m)
             ? static_cast<int>(in.training.recompute_layers * layers + 0.5)
             : 0;
}

// The share of a stage's layers (with the multi-token-prediction ones on the last stage) that
// have routed experts.
double moe_layer_share(const PlanInput& in, int stage_layers, int mtp, bool first) {
  const int layers = stage_layers + mtp;
  if (!is_moe(in.model) || layers == 0) return 0;
  return static_cast<double>(stage_moe_layers(in.model, stage_layers, first) + mtp) /
         static_cast<double>(layers);
}

template <typename V>
void tp_items(const PlanInput& in, const Derived& d, int stage_layers, int mtp, bool first,
              Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  const int layers = stage_layers + mtp;
  if (p.tp <= 1 || in.model.count_only || layers == 0) return;
  const double m = static_cast<double>(d.grad_accum);
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double message = local_tokens(in) * in.model.hidden * ab;
  const int ckpt = full_recomputed_layers(in, layers);
  // Megatron-Core's MoE layers without shared experts have no MLP gather and scatter: their
  // tokens move in the dispatcher (ep_items). Per layer the MLP side is 3 gathers (forward,
  // the input gradient's, the weight gradient's) and 2 reduce-scatters, plus one of each in a
  // recomputed forward.
  const double routed_only = megatron_moe_dispatch(in) && in.model.shared_experts == 0
                                 ? moe_layer_share(in, stage_layers, mtp, first)
                                 : 0.0;
  const double mlp_gathers = m * routed_only * (3.0 * layers + ckpt);
  const double mlp_scatters = m * routed_only * (2.0 * layers + ckpt);
  // Selective recompute of an MLP module (a dense MLP, a MoE layer's shared experts or the
  // whole MoE layer where it gathers over tp) repeats its forward gather and reduce-scatter.
  const double moe_layers_share = moe_layer_share(in, stage_layers, mtp, first);
  double mlp_again =
      selective_recomputed_layers(in, layers, RecomputeModule::mlp) * (1 - moe_layers_share);
  const bool moe_tp_pair = moe_layers_share > 0 && routed_only == 0;
  if (moe_tp_pair &&
      (selective_recomputed_layers(in, layers, RecomputeModule::moe) > 0 ||
       (in.model.shared_experts > 0 &&
        selective_recomputed_layers(in, layers, RecomputeModule::shared_experts) > 0)))
    mlp_again +=
        std::max(selective_recomputed_layers(in, layers, RecomputeModule::moe),
                 selective_recomputed_layers(in, layers, RecomputeModule::shared_experts)) *
        moe_layers_share;
  const double per_step = m * (4.0 * layers + 2.0 * ckpt + mlp_again);
  const Group g = group_of(in, "tp", p.tp);
  Builder<V> b(in);
  const ModelSpec& mo = in.model;
  if (p.sequence_parallel && is_mla(mo) && in.training.framework == Framework::megatron) {
    // Megatron-Core's MLA (transformer/multi_latent_attention.py,
    // get_query_key_value_tensors): the down-projections are replicated and run on the
    // sequence-sharded input, so the attention side gathers the latents (the query's rank, or
    // the hidden state without one, the KV latent and the rope key), not the hidden state:
    // its forward gather, its recomputed gather, its weight-gradient gather and the
    // reduce-scatter of its input gradient are that wide. The MLP side and the output
    // projections move the hidden state.
    const double latent_width =
        (mo.q_lora_rank > 0 ? mo.q_lora_rank : mo.hidden) + mo.kv_lora_rank + mo.qk_rope_head_dim;
    const double latent = local_tokens(in) * latent_width * ab;
    const double L = layers, C = ckpt;
    b.add(CollKind::all_gather, g, message, m * (4.0 * L + C + mlp_again) - mlp_gathers,
          "activations");
    b.add(CollKind::all_gather, g, latent, m * (2.0 * L + C), "MLA latents");
    b.add(CollKind::reduce_scatter, g, message, m * (3.0 * L + 2.0 * C + mlp_again) - mlp_scatters,
          "activations");
    b.add(CollKind::reduce_scatter, g, latent, m * L, "MLA latents' gradients");
  } else if (p.sequence_parallel) {
    // Each all-reduce becomes an all-gather and a reduce-scatter; backward gathers the
    // column-parallel layers' inputs again for their weight gradients (2 per layer).
    b.add(CollKind::all_gather, g, message, per_step + m * 2.0 * layers - mlp_gathers,
          "activations");
    b.add(CollKind::reduce_scatter, g, message, per_step - mlp_scatters, "activations");
  } else {
    b.add(CollKind::all_reduce, g, message, per_step, "activations");
  }
  b.emit(Dim::tp, ItemId::comm_tp, "tensor parallel", k_src_tp, 1, out);
}

template <typename V>
void pp_items(const PlanInput& in, const Derived& d, Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.pp <= 1 || in.model.count_only) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  double message = local_tokens(in) * in.model.hidden * ab;
  if (p.sequence_parallel) message /= p.tp;
  const double chunks = p.schedule == Schedule::interleaved ? p.virtual_stages
                        : p.schedule == Schedule::dualpipev ? 2
                                                            : 1;
  Builder<V> b(in);
  b.add(CollKind::send_recv, group_of(in, "pp", p.pp), message,
        2.0 * static_cast<double>(d.grad_accum) * chunks, "activations or their gradients");
  b.emit(Dim::pp, ItemId::comm_pp, "pipeline sends", k_src_pp, 1, out);
}

template <typename V>
void cp_items(const PlanInput& in, const Derived& d, int layers, Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.cp <= 1 || in.model.count_only || layers == 0) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double kv_heads = std::max(1.0, static_cast<double>(in.model.kv_heads) / p.tp);
  // K and V at their own head sizes: MLA's keys carry the rope part (d_nope + d_rope), its
  // values d_v (DeepSeek-V3: 192 and 128).
  const double message =
      local_tokens(in) * kv_heads * (head_dim(in.model) + v_head_dim(in.model)) * ab;
  Builder<V> b(in);
  // Forward passes K/V around the ring once, backward K/V and their gradients; a recomputed
  // forward passes them again.
  const double rounds = 3.0 * layers + full_recomputed_layers(in, layers);
  b.add(CollKind::send_recv, group_of(in, "cp", p.cp), message,
        (p.cp - 1) * rounds * static_cast<double>(d.grad_accum), "K/V block");
  b.emit(Dim::cp, ItemId::comm_cp, "context parallel (ring attention)", k_src_cp, 1, out);
}

template <typename V>
void ep_items(const PlanInput& in, const Derived& d, int stage_layers, int mtp, bool first,
              Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  const int layers = stage_layers + mtp;
  const int etp = expert_tp(p);
  const bool megatron = megatron_moe_dispatch(in);
  // The expert-tensor-parallel exchange exists only in Megatron-Core's dispatchers.
  const bool etp_traffic = megatron && etp > 1;
  if ((p.ep <= 1 && !etp_traffic) || !is_moe(in.model) || layers == 0) return;
  // Only the stage's layers with routed experts exchange tokens (and the multi-token-prediction
  // modules' MoE layers on the last stage).
  const double moe_share = moe_layer_share(in, stage_layers, mtp, first);
  if (moe_share <= 0) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  // The tokens a rank routes: its sequence-parallel shard in Megatron-Core's MoE layer (the
  // router runs on it) and with torchtitan's etp = 1 (ReordererSequenceParallel splits the
  // tokens over tp); the tensor-parallel group's whole sequence when each rank routes it.
  const bool own_share = p.sequence_parallel && (megatron || etp == 1);
  const double tokens = local_tokens(in) / (own_share ? p.tp : 1);
  // The busiest rank's share of the routed tokens (capacity factor or imbalance).
  const double routed = tokens * in.model.experts_per_token * moe_load(in);
  double message = routed * in.model.hidden * ab;
  Builder<V> b(in);
  // Dispatch and combine in forward and backward, and again in a recomputed forward (full
  // recompute, or selective recompute of the MoE layer: --recompute-modules moe).
  const double ckpt = std::max(full_recomputed_layers(in, layers),
                               selective_recomputed_layers(in, layers, RecomputeModule::moe));
  const double m = static_cast<double>(d.grad_accum);
  const double per_mb = moe_share * (4.0 * layers + 2.0 * ckpt);
  const double pairs = moe_share * (2.0 * layers + ckpt) * m;
  const Group g = group_of(in, "ep", p.ep);
  const int nodes = g.nodes();
  const bool deepep = p.ep_dispatch == EpDispatch::deepep;
  // Megatron-Core's flex dispatcher (DeepEP) sends each token to every expert-tensor-parallel
  // shard of its experts (token_dispatcher.py MoEFlexTokenDispatcher: the routing map expanded
  // over the tp_ep group) instead of gathering after the all-to-all.
  if (deepep && etp_traffic) message *= etp;
  if (p.ep > 1 && deepep && g.link.inter_node && nodes > 1 && g.ranks_per_node < g.size) {
    // DeepEP's internode kernels (deep_ep/buffer.py internode_dispatch/combine): a token
    // crosses the network once per remote node holding one of its experts, to the GPU of the
    // same index there, and NVLink forwards it to the experts' GPUs (not timed: NVLink is
    // several times the NIC). Uniform routing over N nodes touches (N − 1)(1 − (1 − 1/N)^k)
    // remote nodes per token where NCCL's all-to-all sends k(n − r)/n copies off the node; the
    // call is timed as an all-to-all whose off-node bytes are DeepEP's.
    const double k = in.model.experts_per_token;
    const double n = g.size, r = g.ranks_per_node, N = nodes;
    const double remote_nodes = (N - 1) * (1 - std::pow(1 - 1 / N, k));
    const double nccl_copies = k * (n - r) / n;
    b.add(CollKind::all_to_all, g, message * remote_nodes / nccl_copies, per_mb * m,
          "routed tokens (DeepEP: one copy per remote node, NVLink-forwarded)");
  } else if (p.ep_dispatch == EpDispatch::allgather) {
    // Megatron-Core's MoEAllGatherTokenDispatcher (transformer/moe/token_dispatcher.py,
    // token_permutation / token_unpermutation): each rank gathers the hidden states of its
    // expert-tensor-and-expert-parallel group (tp_ep_group, etp × ep ranks, with Megatron's
    // sequence parallelism) whole (gather_from_sequence_parallel_region) and reduce-scatters
    // its experts' outputs back (reduce_scatter_to_sequence_parallel_region); backward runs the
    // pair the other way. Every token reaches every rank, routed to it or not.
    const int width = p.ep * (megatron ? etp : 1);
    const Group ag = megatron ? group_of(in, "etp", width) : g;
    const double whole = tokens * in.model.hidden * ab * width;
    b.add(CollKind::all_gather, ag, whole, pairs, "tokens gathered whole (allgather dispatcher)");
    b.add(CollKind::reduce_scatter, ag, whole, pairs, "experts' outputs (allgather dispatcher)");
  } else if (p.ep > 1) {
    b.add(CollKind::all_to_all, g, message, per_mb * m, "routed tokens");
  }
  if (etp_traffic && !deepep && p.ep_dispatch != EpDispatch::allgather) {
    // Megatron-Core's alltoall dispatcher gathers the tokens it received over the
    // expert-tensor-parallel group (dispatch_postprocess: gather_from_sequence_parallel_region
    // on tp_group) and reduce-scatters the experts' outputs before the combine's all-to-all
    // (combine_preprocess); backward runs each the other way. The experts' GEMMs keep the
    // gathered input, so no gather is repeated for the weight gradient.
    const Group tg = group_of(in, "etp", etp);
    b.add(CollKind::all_gather, tg, message * etp, pairs,
          "routed tokens gathered over the expert-tensor-parallel group");
    b.add(CollKind::reduce_scatter, tg, message * etp, pairs,
          "experts' outputs reduce-scattered over the expert-tensor-parallel group");
  }
  b.emit(Dim::ep, ItemId::comm_ep, "expert parallel", k_src_ep, 1, out);
}

}  // namespace

template <typename V>
Comm<V> communication(const PlanInput& in, const Derived& d, int layers, bool first, bool last,
                      Warnings* warnings) {
  Comm<V> out;
  const ParallelSpec& p = in.parallel;
  const StageParams sp = stage_params(in, layers, first, last);
  dp_items<V>(in, d, sp, layers, out);
  // The last stage also runs the multi-token-prediction modules' layers.
  const int mtp = last ? in.model.mtp_layers : 0;
  tp_items<V>(in, d, layers, mtp, first, out);
  pp_items<V>(in, d, out);
  cp_items<V>(in, d, layers + mtp, out);
  ep_items<V>(in, d, layers, mtp, first, out);
  if (!warnings) return out;
  if (p.tp > 1 && group_of(in, "tp", p.tp).link.inter_node)
    warnings->push_back(
        "parallel: the tp group spans nodes outside one NVLink domain (tp × its inner "
        "dimensions exceeds gpus_per_node, or cluster.nvlink_domain where given); "
        "tensor-parallel traffic uses the inter-node link");
  for (const CommDim& dim : out.dims.dims) {
    for (int i = 0; i < dim.n_calls; ++i) {
      const bool inter = dim.calls[i].inter_node;
      const double bw = inter ? in.cluster.inter_node_bandwidth : in.cluster.intra_node_bandwidth;
      if (bw <= 0) {
        warnings->push_back("cluster: " + std::string(inter ? "inter" : "intra") +
                            "_node_bandwidth is not given: communication and step time are not "
                            "computed");
        return out;
      }
    }
  }
  return out;
}

template Comm<Expr> communication<Expr>(const PlanInput&, const Derived&, int, bool, bool,
                                        Warnings*);
template Comm<Num> communication<Num>(const PlanInput&, const Derived&, int, bool, bool, Warnings*);

}  // namespace trainledger
