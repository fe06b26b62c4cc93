// Communication per optimizer step, per GPU (docs/formulas.md#communication).
#include <algorithm>
#include <cmath>

#include "activations.hpp"
#include "stage_params.hpp"
#include "state.hpp"
#include "timing.hpp"
#include "trainledger/collectives.hpp"

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

struct Builder {
  Expr volume = Expr::term("none", 0, "B");
  Expr time = Expr::term("none", 0, "s");
  std::vector<Collective> calls;
  bool any = false;

  void add(CollKind kind, const Group& g, double message_bytes, double calls_per_step,
           const std::string& what) {
    const Expr msg = Expr::term("message_bytes", message_bytes, "B " + what);
    const Expr n = Expr::term("calls", calls_per_step, "calls");
    const Expr v = (n * call_volume(kind, g.size, msg)).note(std::string(to_string(kind)));
    const Expr t = calls_time(kind, g, msg, n);
    volume = any ? volume + v : v;
    time = any ? time + t : t;
    any = true;
    calls.push_back(Collective{std::string(to_string(kind)), g.size, message_bytes, calls_per_step,
                               g.link.name()});
  }

  void emit(const std::string& id, const std::string& label, const char* source,
            std::vector<LineItem>& out) {
    if (!any) return;
    LineItem item = make_item(id, label, Unit::bytes, volume, source);
    item.time_s = time.value();
    item.time_formula = time.text();
    item.collectives = calls;
    out.push_back(std::move(item));
  }
};

double grad_syncs(const PlanInput& in, const Derived& d) {
  return in.parallel.grad_sync == GradSync::every_micro_batch ? static_cast<double>(d.grad_accum)
                                                              : 1.0;
}

void dp_items(const PlanInput& in, const Derived& d, const StageParams& sp, int layers,
              std::vector<LineItem>& out) {
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
  Builder b;
  const int shard = p.zero > 0 && p.zero_shard_size > 0 ? p.zero_shard_size : replicas;
  const Group whole = group_of(in, "dp", replicas);
  Group shard_group = group_of(in, "dp", shard);
  shard_group.name = "dp_shard";
  const double buckets = std::max(1.0, std::ceil(grad_bytes / p.bucket_size));
  if (p.zero == 0) {
    b.add(ar, whole, grad_bytes / buckets, buckets * syncs, "gradient bucket");
  } else if (p.zero <= 2) {
    b.add(CollKind::reduce_scatter, shard_group, grad_bytes / buckets, buckets * syncs,
          "gradient bucket");
    b.add(CollKind::all_gather, shard_group, param_bytes_local, 1, "updated parameters");
  } else {
    // FSDP gathers and reduces one wrapped unit at a time: every layer, and the root.
    const double units = std::max(1, layers) + 1.0;
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
  b.emit(
      "comm.dp",
      "data parallel (" + std::string(p.zero == 0 ? "DDP" : "ZeRO-" + std::to_string(p.zero)) + ")",
      k_src_dp, out);
}

void tp_items(const PlanInput& in, const Derived& d, int layers, std::vector<LineItem>& out) {
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
  Builder b;
  if (p.sequence_parallel) {
    // Each all-reduce becomes an all-gather and a reduce-scatter; backward gathers the
    // column-parallel layers' inputs again for their weight gradients (2 per layer).
    b.add(CollKind::all_gather, g, message, per_step + m * 2.0 * layers, "activations");
    b.add(CollKind::reduce_scatter, g, message, per_step, "activations");
  } else {
    b.add(CollKind::all_reduce, g, message, per_step, "activations");
  }
  b.emit("comm.tp", "tensor parallel", k_src_tp, out);
}

void pp_items(const PlanInput& in, const Derived& d, std::vector<LineItem>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.pp <= 1 || in.model.count_only) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  double message = local_tokens(in) * in.model.hidden * ab;
  if (p.sequence_parallel) message /= p.tp;
  const double chunks = p.schedule == Schedule::interleaved ? p.virtual_stages : 1;
  Builder b;
  b.add(CollKind::send_recv, group_of(in, "pp", p.pp), message,
        2.0 * static_cast<double>(d.grad_accum) * chunks, "activations or their gradients");
  b.emit("comm.pp", "pipeline sends", k_src_pp, out);
}

void cp_items(const PlanInput& in, const Derived& d, int layers, std::vector<LineItem>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.cp <= 1 || in.model.count_only || layers == 0) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double kv_heads = std::max(1.0, static_cast<double>(in.model.kv_heads) / p.tp);
  const double message = 2 * local_tokens(in) * kv_heads * head_dim(in.model) * ab;
  Builder b;
  b.add(CollKind::send_recv, group_of(in, "cp", p.cp), message,
        3.0 * (p.cp - 1) * layers * static_cast<double>(d.grad_accum), "K/V block");
  b.emit("comm.cp", "context parallel (ring attention)", k_src_cp, out);
}

void ep_items(const PlanInput& in, const Derived& d, int layers, std::vector<LineItem>& out) {
  const ParallelSpec& p = in.parallel;
  if (p.ep <= 1 || !is_moe(in.model) || layers == 0) return;
  const double ab = in.training.precision == DType::fp32 ? 4 : 2;
  const double message = local_tokens(in) * in.model.experts_per_token * in.model.hidden * ab;
  Builder b;
  b.add(CollKind::all_to_all, group_of(in, "ep", p.ep), message,
        4.0 * layers * static_cast<double>(d.grad_accum), "routed tokens");
  b.emit("comm.ep", "expert parallel", k_src_ep, out);
}

}  // namespace

std::vector<LineItem> communication_items(const PlanInput& in, const Derived& d, int layers,
                                          std::vector<std::string>& warnings) {
  std::vector<LineItem> out;
  const ParallelSpec& p = in.parallel;
  const StageParams sp = stage_params(in, layers, p.pp == 1, true);
  dp_items(in, d, sp, layers, out);
  tp_items(in, d, layers, out);
  pp_items(in, d, out);
  cp_items(in, d, layers, out);
  ep_items(in, d, layers, out);
  if (p.tp > 1 && group_of(in, "tp", p.tp).link.inter_node)
    warnings.push_back(
        "parallel: the tp group spans nodes (tp × its inner dimensions exceeds "
        "gpus_per_node); tensor-parallel traffic uses the inter-node link");
  for (const LineItem& item : out) {
    for (const Collective& c : item.collectives) {
      const bool inter = c.link == "inter-node";
      const double bw = inter ? in.cluster.inter_node_bandwidth : in.cluster.intra_node_bandwidth;
      if (bw <= 0) {
        warnings.push_back("cluster: " + std::string(inter ? "inter" : "intra") +
                           "_node_bandwidth is not given: communication time is not computed");
        return out;
      }
    }
  }
  return out;
}

}  // namespace trainledger
