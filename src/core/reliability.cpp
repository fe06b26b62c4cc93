// Checkpoints and failures (docs/formulas.md#reliability and #errata 2-3).
#include <cmath>

#include "state.hpp"
#include "timing.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_ckpt =
    "a training checkpoint holds weights, master weights and optimizer state, not gradients "
    "(docs/formulas.md#errata 3)";
constexpr const char* k_src_mtbf = "cluster MTBF = 1 / (GPUs × failures per GPU-hour)";
constexpr const char* k_src_young = "Young 1974: τ = √(2·δ·M)";
constexpr const char* k_src_daly =
    "Daly 2006, eq. 37: τ = √(2δM)·[1 + ⅓·√(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M";
constexpr const char* k_src_waste =
    "expected waste ≈ δ/τ (writing) + (τ/2 + R)/M (lost work and restart per failure); "
    "docs/formulas.md#errata 2 corrects the source documents' E(T) = 4fT + 55.8/T";

}  // namespace

template <typename V>
Items<V> reliability_items(const PlanInput& in, const Derived& d, const Items<V>& time) {
  Items<V> out;
  const CheckpointSpec& c = in.checkpoint;
  const V size = checkpoint_size<V>(in, d);
  out.push_back(make(ItemId::checkpoint_size, "checkpoint: weights + master + optimizer state",
                     Unit::bytes, size, k_src_ckpt));
  // A sharded save writes from every rank in parallel; a gathered one through one rank's NIC.
  V bandwidth = input<V>(in, "checkpoint.storage_bandwidth", "storage_bandwidth",
                         c.storage_bandwidth, "B/s storage");
  if (c.format == CheckpointFormat::gathered && in.cluster.inter_node_bandwidth > 0 &&
      in.cluster.inter_node_bandwidth < c.storage_bandwidth)
    bandwidth = input<V>(in, "cluster.inter_node_bandwidth", "nic_bandwidth",
                         in.cluster.inter_node_bandwidth, "B/s (one rank's link)");
  const V delta = V::term("checkpoint_bytes", size.value(), "B") / bandwidth;
  out.push_back(make(ItemId::checkpoint_write_time, "checkpoint write time (δ)", Unit::seconds,
                     delta, "checkpoint size / write bandwidth"));
  V rate = V::term("gpus", d.world_size, "GPUs") * input<V>(in, "checkpoint.gpu_failure_rate",
                                                            "failure_rate", c.gpu_failure_rate,
                                                            "failures per GPU-hour");
  // Components that fail per node (host, NIC, switch port, storage client), when given apart.
  if (c.node_failure_rate > 0)
    rate = rate + V::term("nodes", in.cluster.nodes, "nodes") *
                      input<V>(in, "checkpoint.node_failure_rate", "node_failure_rate",
                               c.node_failure_rate, "failures per node-hour");
  // No failures expected (both rates 0): no MTBF, interval or waste to compute (a division by
  // a zero rate would read as "MTBF 0 s"); plan.cpp says so in a warning.
  if (!(rate.value() > 0)) return out;
  const V mtbf = V::term("seconds_per_hour", 3600, "s/h") / rate;
  out.push_back(make(ItemId::mtbf, "cluster mean time between failures (M)", Unit::seconds, mtbf,
                     k_src_mtbf, Kind::assumed));
  const double dv = delta.value(), mv = mtbf.value();
  const V dM = V::term("write_time", dv, "s (δ)") * V::term("mtbf", mv, "s (M)");
  const V young = V::sqrt(V::constant(2) * dM);
  out.push_back(make(ItemId::checkpoint_interval_young, "optimal interval (Young)", Unit::seconds,
                     young, k_src_young));
  V daly = V::term("mtbf", mv, "s (M)");
  if (dv < 2 * mv) {
    const V x =
        V::term("write_time", dv, "s (δ)") / (V::constant(2) * V::term("mtbf", mv, "s (M)"));
    daly = young * (V::constant(1) + V::sqrt(x) / V::constant(3) + x / V::constant(9)) -
           V::term("write_time", dv, "s (δ)");
  }
  out.push_back(make(ItemId::checkpoint_interval_daly, "optimal interval (Daly)", Unit::seconds,
                     daly, k_src_daly));
  auto waste_at = [&](double tau) {
    return V::term("write_time", dv, "s (δ)") / V::term("interval", tau, "s (τ)") +
           (V::term("interval", tau, "s (τ)") / V::constant(2) +
            input<V>(in, "checkpoint.restart_time", "restart_time", c.restart_time, "s (R)")) /
               V::term("mtbf", mv, "s (M)");
  };
  const V waste = waste_at(young.value());
  out.push_back(make(ItemId::checkpoint_waste, "expected waste at Young's interval", Unit::fraction,
                     waste, k_src_waste));
  double waste_used = waste.value();
  if (c.interval > 0) {
    const V planned = waste_at(c.interval);
    waste_used = planned.value();
    out.push_back(make(ItemId::checkpoint_waste_planned, "expected waste at checkpoint.interval",
                       Unit::fraction, planned, k_src_waste));
  }
  if (const double train = value_of(time, ItemId::time_to_train);
      has_item(time, ItemId::time_to_train) && waste_used < 1) {
    // The run's wall time grows by 1/(1 − waste); the difference is lost to checkpoints,
    // failures and restarts.
    const V lost = V::term("useful_s", train, "s of training") *
                   V::term("waste", waste_used, "waste") /
                   (V::constant(1) - V::term("waste", waste_used, "waste"));
    out.push_back(make(ItemId::reliability_time_lost, "time lost over the run", Unit::seconds, lost,
                       k_src_waste));
    out.push_back(make(
        ItemId::reliability_failures, "expected failures over the run", Unit::count,
        (V::term("useful_s", train, "s of training") + V::term("lost_s", lost.value(), "s lost")) /
            V::term("mtbf", mv, "s (M)"),
        k_src_mtbf));
  }
  return out;
}

template Items<Expr> reliability_items<Expr>(const PlanInput&, const Derived&, const Items<Expr>&);
template Items<Num> reliability_items<Num>(const PlanInput&, const Derived&, const Items<Num>&);

}  // namespace trainledger
