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
    "adds an all-reduce of the shard across replicas";
constexpr const char* k_src_tp =
    "Shoeybi et al. 2019 §3 and Korthikanti et al. 2022 §4.2.2: 2 all-reduces per layer in "
    "forward, 2 in backward (2 more under full recompute); with sequence parallelism each is an "
    "all-gather + reduce-scatter of the same bytes";
constexpr const char* k_src_pp =
    "Narayanan et al. 2021 §2.2: each micro-batch crosses every stage boundary forward "
    "(activations) and backward (their gradients)";
constexpr const char* k_src_cp =
    "Liu et al. 2023 (Ring Attention): each rank passes its K/V block around the ring, cp − 1 "
    "steps per layer in forward, K/V and their gradients in backward";
constexpr const char* k_src_ep =
    "Lepikhin et al. 2020 (GShard), Megatron-Core MoE: all-to-all dispatch and combine per MoE "
    "layer, forward and backward";

template <typename V>
struct Builder {
  explicit Builder(const PlanInput& plan) : in(&plan) {}
  const PlanInput* in;
  V volume = V::term("none", 0, "B");
  V time = V::term("none", 0, "s");
  CommDim dim;
  bool any = false;

  void add(CollKind kind, const Group& g, double message_bytes, double calls_per_step,
           std::string_view what, bool after_step = false) {
    const V msg = V::term("message_bytes", message_bytes, Text("B ", what));
    const V n = V::term("calls", calls_per_step, "calls");
    const V v = (n * call_volume(kind, g.size, msg)).note(to_string(kind));
    const V t = calls_time(*in, kind, g, msg, n);
    volume = any ? volume + v : v;
    time = any ? time + t : t;
    any = true;
    if (dim.n_calls < static_cast<int>(dim.calls.size()))
      dim.calls[dim.n_calls++] = CollCall{
          kind, g.size, message_bytes, calls_per_step, g.link.inter_node, t.value(), after_step};
  }

  // Records the dimension's typed result and its report item. `granule_calls`: the calls
  // that split the overlappable traffic into the units of which one is always exposed.
  template <typename L>
  void emit(Dim d, ItemId id, L&& label, const char* source, double granule_calls, Comm<V>& out) {
    if (!any) return;
    const auto item = make(id, std::forward<L>(label), Unit::bytes, volume, source);
    dim.dim = d;
    dim.present = true;
    dim.bytes = item.value;
    dim.time_s = time.value();
    double tail = 0;
    for (int i = 0; i < dim.n_calls; ++i)
      if (dim.calls[i].after_step) tail += dim.calls[i].time_s;
    dim.tail_s = tail;
    dim.overlappable_s = dim.time_s - tail;
    dim.granule_s = dim.overlappable_s / std::max(1.0, granule_calls);
    out.dims[d] = dim;
    out.items.push_back(item);
    if constexpr (V::explained) {
      LineItem& li = out.items.back();
      li.time_s = time.value();
      li.time_formula = time.text();
      for (int i = 0; i < dim.n_calls; ++i) {
        const CollCall& c = dim.calls[i];
        li.collectives.push_back(Collective{std::string(to_string(c.kind)), c.group_size,
                                            c.message_bytes, c.calls_per_step,
                                            c.inter_node ? "inter-node" : "intra-node"});
      }
    }
  }
};

double grad_syncs(const PlanInput& in, const Derived& d) {
  return in.parallel.grad_sync == GradSync::every_micro_batch ? static_cast<double>(d.grad_accum)
                                                              : 1.0;
}

template <typename V>
void dp_items(const PlanInput& in, const Derived& d, const StageParams& sp, int layers,
              Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  const int replicas = p.dp * p.cp;
  if (replicas <= 1) return;
  const double share = d.params > 0 ? d.trainable_params / d.params : 1.0;
  const double trainable =
      in.training.finetune == Finetune::full ? sp.total() * share : sp.adapters;
  const double grad_bytes = trainable * dtype_bytes(in.training.grad_dtype);
  const double param_bytes_local = trainable * param_bytes(in.training);
  const double syncs = grad_syncs(in, d);
  const double m = static_cast<double>(d.grad_accum);
  const CollKind ar = p.tree_allreduce ? CollKind::tree_all_reduce : CollKind::all_reduce;
  Builder<V> b(in);
  const int shard = p.zero > 0 && p.zero_shard_size > 0 ? p.zero_shard_size : replicas;
  const Group whole = group_of(in, "dp", replicas);
  Group shard_group = group_of(in, "dp", shard);
  shard_group.name = "dp_shard";
  const double buckets = std::max(1.0, std::ceil(grad_bytes / p.bucket_size));
  // One bucket (DDP, ZeRO-1/2) or one gathered unit (ZeRO-3) is never hidden.
  double granule_calls = buckets * syncs;
  if (p.zero == 0) {
    b.add(ar, whole, grad_bytes / buckets, buckets * syncs, "gradient bucket");
  } else if (p.zero <= 2) {
    b.add(CollKind::reduce_scatter, shard_group, grad_bytes / buckets, buckets * syncs,
          "gradient bucket");
    // The updated parameters are gathered after the optimizer step.
    b.add(CollKind::all_gather, shard_group, param_bytes_local, 1, "updated parameters", true);
  } else {
    // FSDP gathers and reduces one wrapped unit at a time: every layer, and the root.
    const double units = std::max(1, layers) + 1.0;
    granule_calls = m * units;
    b.add(CollKind::all_gather, shard_group, param_bytes_local / units, m * units,
          "parameters of one unit (forward)");
    b.add(CollKind::all_gather, shard_group, param_bytes_local / units, m * units,
          "parameters of one unit (backward)");
    b.add(CollKind::reduce_scatter, shard_group, grad_bytes / units, syncs * units,
          "gradients of one unit");
  }
  if (shard < replicas) {
    // HSDP: the shard's gradients are averaged across the replicas once per step.
    Group rep = group_of(in, "dp", replicas / shard);
    rep.name = "dp_replicate";
    rep.link = whole.link;
    b.add(ar, rep, grad_bytes / shard, 1, "gradient shard across replicas");
  }
  auto label = [&] {
    return "data parallel (" + std::string(p.zero == 0 ? "DDP" : "ZeRO-" + std::to_string(p.zero)) +
           ")";
  };
  b.emit(Dim::dp, ItemId::comm_dp, label, k_src_dp, granule_calls, out);
}

template <typename V>
void tp_items(const PlanInput& in, const Derived& d, int layers, Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.tp <= 1 || in.model.count_only || layers == 0) return;
  const double m = static_cast<double>(d.grad_accum);
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double message = local_tokens(in) * in.model.hidden * ab;
  const int ckpt = in.training.recompute == Recompute::full
                       ? static_cast<int>(in.training.recompute_layers * layers + 0.5)
                       : 0;
  const double per_step = m * (4.0 * layers + 2.0 * ckpt);
  const Group g = group_of(in, "tp", p.tp);
  Builder<V> b(in);
  if (p.sequence_parallel) {
    // Each all-reduce becomes an all-gather and a reduce-scatter; backward gathers the
    // column-parallel layers' inputs again for their weight gradients (2 per layer).
    b.add(CollKind::all_gather, g, message, per_step + m * 2.0 * layers, "activations");
    b.add(CollKind::reduce_scatter, g, message, per_step, "activations");
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
  const double chunks = p.schedule == Schedule::interleaved ? p.virtual_stages : 1;
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
  const double message = 2 * local_tokens(in) * kv_heads * head_dim(in.model) * ab;
  Builder<V> b(in);
  b.add(CollKind::send_recv, group_of(in, "cp", p.cp), message,
        3.0 * (p.cp - 1) * layers * static_cast<double>(d.grad_accum), "K/V block");
  b.emit(Dim::cp, ItemId::comm_cp, "context parallel (ring attention)", k_src_cp, 1, out);
}

template <typename V>
void ep_items(const PlanInput& in, const Derived& d, int layers, Comm<V>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.ep <= 1 || !is_moe(in.model) || layers == 0) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double message = local_tokens(in) * in.model.experts_per_token * in.model.hidden * ab;
  Builder<V> b(in);
  b.add(CollKind::all_to_all, group_of(in, "ep", p.ep), message,
        4.0 * layers * static_cast<double>(d.grad_accum), "routed tokens");
  b.emit(Dim::ep, ItemId::comm_ep, "expert parallel", k_src_ep, 1, out);
}

}  // namespace

template <typename V>
Comm<V> communication(const PlanInput& in, const Derived& d, int layers, Warnings* warnings) {
  Comm<V> out;
  const ParallelSpec& p = in.parallel;
  const StageParams sp = stage_params(in, layers, p.pp == 1, true);
  dp_items<V>(in, d, sp, layers, out);
  tp_items<V>(in, d, layers, out);
  pp_items<V>(in, d, out);
  cp_items<V>(in, d, layers, out);
  ep_items<V>(in, d, layers, out);
  if (!warnings) return out;
  if (p.tp > 1 && group_of(in, "tp", p.tp).link.inter_node)
    warnings->push_back(
        "parallel: the tp group spans nodes (tp × its inner dimensions exceeds "
        "gpus_per_node); tensor-parallel traffic uses the inter-node link");
  for (const CommDim& dim : out.dims.dims) {
    for (int i = 0; i < dim.n_calls; ++i) {
      const bool inter = dim.calls[i].inter_node;
      const double bw = inter ? in.cluster.inter_node_bandwidth : in.cluster.intra_node_bandwidth;
      if (bw <= 0) {
        warnings->push_back("cluster: " + std::string(inter ? "inter" : "intra") +
                            "_node_bandwidth is not given: communication time is not computed");
        return out;
      }
    }
  }
  return out;
}

template Comm<Expr> communication<Expr>(const PlanInput&, const Derived&, int, Warnings*);
template Comm<Num> communication<Num>(const PlanInput&, const Derived&, int, Warnings*);

}  // namespace trainledger
