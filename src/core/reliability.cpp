// Checkpoints and failures (docs/formulas.md#reliability; FORMULAS.md §5 and errata 2-3).
#include <cmath>

#include "state.hpp"
#include "timing.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_ckpt =
    "a training checkpoint holds weights, master weights and optimizer state, not gradients "
    "(FORMULAS.md errata 3)";
constexpr const char* k_src_mtbf = "cluster MTBF = 1 / (GPUs × failures per GPU-hour)";
constexpr const char* k_src_young = "Young 1974: τ = √(2·δ·M)";
constexpr const char* k_src_daly =
    "Daly 2006, eq. 37: τ = √(2δM)·[1 + ⅓·√(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M";
constexpr const char* k_src_waste =
    "expected waste ≈ δ/τ (writing) + (τ/2 + R)/M (lost work and restart per failure); "
    "FORMULAS.md errata 2 corrects the seed's E(T) = 4fT + 55.8/T";

}  // namespace

std::vector<LineItem> reliability_items(const PlanInput& in, const Derived& d,
                                        const std::vector<LineItem>& time) {
  std::vector<LineItem> out;
  const CheckpointSpec& c = in.checkpoint;
  const Expr size = checkpoint_size(in, d);
  out.push_back(make_item("checkpoint.size", "checkpoint: weights + master + optimizer state",
                          Unit::bytes, size, k_src_ckpt));
  // A sharded save writes from every rank in parallel; a gathered one through one rank's NIC.
  Expr bandwidth = Expr::term("storage_bandwidth", c.storage_bandwidth, "B/s storage");
  if (c.format == CheckpointFormat::gathered && in.cluster.inter_node_bandwidth > 0 &&
      in.cluster.inter_node_bandwidth < c.storage_bandwidth)
    bandwidth =
        Expr::term("nic_bandwidth", in.cluster.inter_node_bandwidth, "B/s (one rank's link)");
  const Expr delta = Expr::term("checkpoint_bytes", size.value(), "B") / bandwidth;
  out.push_back(make_item("checkpoint.write_time", "checkpoint write time (δ)", Unit::seconds,
                          delta, "checkpoint size / write bandwidth"));
  const Expr mtbf = Expr::term("seconds_per_hour", 3600, "s/h") /
                    (Expr::term("gpus", d.world_size, "GPUs") *
                     Expr::term("failure_rate", c.gpu_failure_rate, "failures per GPU-hour"));
  out.push_back(make_item("mtbf", "cluster mean time between failures (M)", Unit::seconds, mtbf,
                          k_src_mtbf, Kind::assumed));
  const double dv = delta.value(), mv = mtbf.value();
  const Expr dM = Expr::term("write_time", dv, "s (δ)") * Expr::term("mtbf", mv, "s (M)");
  const Expr young = Expr::sqrt(Expr::constant(2) * dM);
  out.push_back(make_item("checkpoint.interval_young", "optimal interval (Young)", Unit::seconds,
                          young, k_src_young));
  Expr daly = Expr::term("mtbf", mv, "s (M)");
  if (dv < 2 * mv) {
    const Expr x = Expr::term("write_time", dv, "s (δ)") /
                   (Expr::constant(2) * Expr::term("mtbf", mv, "s (M)"));
    daly = young * (Expr::constant(1) + Expr::sqrt(x) / Expr::constant(3) + x / Expr::constant(9)) -
           Expr::term("write_time", dv, "s (δ)");
  }
  out.push_back(make_item("checkpoint.interval_daly", "optimal interval (Daly)", Unit::seconds,
                          daly, k_src_daly));
  auto waste_at = [&](double tau) {
    return Expr::term("write_time", dv, "s (δ)") / Expr::term("interval", tau, "s (τ)") +
           (Expr::term("interval", tau, "s (τ)") / Expr::constant(2) +
            Expr::term("restart_time", c.restart_time, "s (R)")) /
               Expr::term("mtbf", mv, "s (M)");
  };
  const Expr waste = waste_at(young.value());
  out.push_back(make_item("checkpoint.waste", "expected waste at Young's interval", Unit::fraction,
                          waste, k_src_waste));
  double waste_used = waste.value();
  if (c.interval > 0) {
    const Expr planned = waste_at(c.interval);
    waste_used = planned.value();
    out.push_back(make_item("checkpoint.waste_planned", "expected waste at checkpoint.interval",
                            Unit::fraction, planned, k_src_waste));
  }
  if (const LineItem* train = find_item(time, "time.to_train"); train && waste_used < 1) {
    // The run's wall time grows by 1/(1 − waste); the difference is lost to checkpoints,
    // failures and restarts.
    const Expr lost = Expr::term("useful_s", train->value, "s of training") *
                      Expr::term("waste", waste_used, "waste") /
                      (Expr::constant(1) - Expr::term("waste", waste_used, "waste"));
    out.push_back(make_item("reliability.time_lost", "time lost over the run", Unit::seconds, lost,
                            k_src_waste));
    out.push_back(make_item("reliability.failures", "expected failures over the run", Unit::count,
                            (Expr::term("useful_s", train->value, "s of training") +
                             Expr::term("lost_s", lost.value(), "s lost")) /
                                Expr::term("mtbf", mv, "s (M)"),
                            k_src_mtbf));
  }
  return out;
}

}  // namespace trainledger
