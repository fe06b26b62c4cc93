// The step: compute, recompute, exposed communication, the pipeline bubble and the optimizer
// (docs/formulas.md#step); throughput, MFU and HFU.
#include <algorithm>
#include <cmath>

#include "stage_params.hpp"
#include "state.hpp"
#include "timing.hpp"
#include "trainledger/collectives.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_compute =
    "FLOPs from the architecture (docs/formulas.md#compute) / (dense peak × compute "
    "efficiency); the efficiency is assumed per GPU generation until calibration measures it";
constexpr const char* k_src_bubble =
    "Narayanan et al. 2021 §2.2: 1F1B and GPipe idle (p − 1) micro-batch times per step, "
    "interleaved (p − 1)/v; ZB-H1 about (p − 1)/3 (Qi et al. 2023)";
constexpr const char* k_src_overlap =
    "assumptions (parallel.overlap_*): DP/ZeRO traffic hides behind compute except the last "
    "bucket and ZeRO-1/2's parameter all-gather; TP and pipeline sends are exposed";
constexpr const char* k_src_optimizer =
    "the optimizer step is memory-bound: it reads and writes the master weights and optimizer "
    "state and reads the gradients once (bytes / HBM bandwidth)";
constexpr const char* k_src_mfu =
    "Chowdhery et al. 2022 (PaLM) App. B: MFU counts the model's FLOPs without recomputation; "
    "HFU counts the FLOPs executed";

double peak_rate(const PlanInput& in) {
  const PeakFlops& f = in.cluster.gpu.peak_flops;
  switch (in.training.precision) {
    case DType::fp32:
      return f.fp32;
    case DType::fp16:
      return f.fp16 > 0 ? f.fp16 : f.bf16;
    case DType::fp8:
      return f.fp8 > 0 ? f.fp8 : f.bf16;
    default:
      return f.bf16 > 0 ? f.bf16 : f.fp16;
  }
}

const LineItem* comm(const std::vector<LineItem>& items, const char* id) {
  return find_item(items, id);
}

double comm_time(const std::vector<LineItem>& items, const char* id) {
  const LineItem* i = comm(items, id);
  return i && i->time_s ? *i->time_s : 0.0;
}

Expr bubble_periods(const PlanInput& in) {
  const ParallelSpec& p = in.parallel;
  const Expr idle = Expr::term("stages", p.pp, "stages") - Expr::constant(1);
  switch (p.schedule) {
    case Schedule::interleaved:
      return idle / Expr::term("virtual_stages", p.virtual_stages, "chunks");
    case Schedule::zb_h1:
      return idle / Expr::constant(3);
    default:
      return idle;
  }
}

// Exposed data-parallel time: what cannot hide behind the backward pass.
double dp_exposed(const PlanInput& in, const std::vector<LineItem>& comms, double backward_s,
                  double compute_s) {
  const LineItem* dp = comm(comms, "comm.dp");
  if (!dp || !dp->time_s) return 0;
  const double total = *dp->time_s;
  const ParallelSpec& p = in.parallel;
  if (!p.overlap_dp) return total;
  if (p.zero >= 3) {
    // Prefetching hides the gathers except the first layer of each pass.
    const double per_call = total / std::max(1.0, dp->collectives.front().calls_per_step);
    return std::max(2 * per_call, total - compute_s);
  }
  double tail = 0, overlappable = total;
  if (p.zero >= 1) {
    // The parameter all-gather follows the optimizer step.
    const Collective& ag = dp->collectives[1];
    const Group g = group_of(in, "dp", ag.group_size);
    tail = calls_time(CollKind::all_gather, g, Expr::constant(ag.message_bytes),
                      Expr::constant(ag.calls_per_step))
               .value();
    overlappable = total - tail;
  }
  const Collective& first = dp->collectives.front();
  const double last_bucket = overlappable / std::max(1.0, first.calls_per_step);
  return tail + std::max(last_bucket, overlappable - backward_s);
}

}  // namespace

std::vector<LineItem> time_items(const PlanInput& in, const Derived& d,
                                 const std::vector<int>& stage_layers,
                                 const std::vector<LineItem>& comms, const StageMemory& worst,
                                 std::vector<std::string>& warnings) {
  std::vector<LineItem> out;
  if (in.model.count_only) return out;
  const double peak = peak_rate(in);
  if (peak <= 0) {
    warnings.push_back("cluster: no peak FLOP/s for " +
                       std::string(to_string(in.training.precision)) +
                       " (cluster.peak_flops): step time is not computed");
    return out;
  }
  const double rate = peak * in.cluster.matmul_efficiency;
  const double hbm_rate = in.cluster.gpu.memory_bandwidth * in.cluster.memory_efficiency;
  const int pp = static_cast<int>(stage_layers.size());
  const double m = static_cast<double>(d.grad_accum);
  // The slowest stage sets the pipeline's pace.
  int slow = 0;
  double slow_s = -1;
  std::vector<StageFlops> flops;
  for (int s = 0; s < pp; ++s) {
    flops.push_back(stage_flops(in, stage_layers[s], s == pp - 1));
    const double t =
        (flops[s].forward + flops[s].backward + flops[s].recompute) / rate +
        (hbm_rate > 0
             ? (flops[s].elementwise_bytes + flops[s].recompute_elementwise_bytes) / hbm_rate
             : 0.0);
    if (t > slow_s) {
      slow_s = t;
      slow = s;
    }
  }
  const StageFlops& f = flops[slow];
  const Expr rate_e = Expr::term("peak_flops", peak, "FLOP/s peak") *
                      Expr::term("matmul_efficiency", in.cluster.matmul_efficiency, "efficiency");
  const Expr hbm_e = Expr::term("memory_bandwidth", in.cluster.gpu.memory_bandwidth, "B/s HBM") *
                     Expr::term("memory_efficiency", in.cluster.memory_efficiency, "efficiency");
  const Expr mb = Expr::term("micro_batches", m, "micro-batches");
  const bool hbm_known = hbm_rate > 0;
  Expr compute = mb *
                 (Expr::term("forward_flops", f.forward, "FLOP forward") +
                  Expr::term("backward_flops", f.backward, "FLOP backward")) /
                 rate_e;
  Expr recompute = mb * Expr::term("recompute_flops", f.recompute, "FLOP recompute") / rate_e;
  if (hbm_known) {
    compute = compute +
              mb * Expr::term("elementwise_bytes", f.elementwise_bytes, "B element-wise") / hbm_e;
    recompute = recompute + mb *
                                Expr::term("recompute_elementwise_bytes",
                                           f.recompute_elementwise_bytes, "B element-wise") /
                                hbm_e;
  } else {
    warnings.push_back("cluster: no memory_bandwidth: element-wise kernels are not timed");
  }
  out.push_back(make_item("time.compute", "compute, slowest stage (" + std::to_string(slow) + ")",
                          Unit::seconds, compute, k_src_compute, Kind::estimated));
  out.push_back(make_item("time.recompute", "activation recomputation", Unit::seconds, recompute,
                          k_src_compute));
  // Per-micro-batch exposed traffic on the critical path.
  const ParallelSpec& p = in.parallel;
  const double tp_s = p.overlap_tp ? 0 : comm_time(comms, "comm.tp");
  const double ep_s = comm_time(comms, "comm.ep");
  const double cp_s = p.overlap_cp ? 0 : comm_time(comms, "comm.cp");
  const double pp_s = comm_time(comms, "comm.pp");
  const double syncs = p.grad_sync == GradSync::every_micro_batch ? m : 1.0;
  const double dp_s = dp_exposed(in, comms, syncs * f.backward / rate, m * slow_s);
  const Expr exposed = Expr::term("tp_s", tp_s, "s TP") + Expr::term("ep_s", ep_s, "s EP") +
                       Expr::term("cp_s", cp_s, "s CP") + Expr::term("pp_s", pp_s, "s PP") +
                       Expr::term("dp_s", dp_s, "s DP");
  out.push_back(make_item("time.comm_exposed", "communication not hidden by compute", Unit::seconds,
                          exposed, k_src_overlap, Kind::assumed));
  // One micro-batch's time on the slowest stage, with its exposed TP/EP/CP traffic.
  const Expr per_mb =
      Expr::term("micro_batch_s", slow_s, "s per micro-batch") +
      Expr::term("per_micro_batch_comm", (tp_s + ep_s + cp_s) / m, "s exposed per micro-batch");
  const Expr bubble =
      pp > 1 ? bubble_periods(in) * per_mb : Expr::term("bubble_s", 0, "s (no pipeline)");
  out.push_back(make_item("time.bubble", "pipeline bubble", Unit::seconds, bubble, k_src_bubble));
  // The optimizer step streams the state of the worst stage through HBM.
  double state_bytes = 0;
  for (const LineItem& i : worst.items)
    if (i.id == "master" || i.id == "grads" || i.id.rfind("optimizer.", 0) == 0 || i.id == "params")
      state_bytes += i.value;
  const double hbm = in.cluster.gpu.memory_bandwidth;
  const Expr optimizer = hbm > 0 ? Expr::constant(2) *
                                       Expr::term("state_bytes", state_bytes, "B of state") /
                                       Expr::term("memory_bandwidth", hbm, "B/s HBM")
                                 : Expr::term("optimizer_s", 0, "s (no memory_bandwidth given)");
  out.push_back(make_item("time.optimizer", "optimizer step", Unit::seconds, optimizer,
                          k_src_optimizer, Kind::estimated));
  const Expr step = Expr::term("compute_s", compute.value(), "s compute") +
                    Expr::term("recompute_s", recompute.value(), "s recompute") +
                    Expr::term("exposed_s", exposed.value(), "s exposed communication") +
                    Expr::term("bubble_s", bubble.value(), "s bubble") +
                    Expr::term("optimizer_s", optimizer.value(), "s optimizer");
  out.push_back(make_item("time.step", "time per optimizer step", Unit::seconds, step,
                          "the sum of the step's parts (docs/formulas.md#step)"));
  const Expr bubble_fraction =
      pp > 1 ? bubble_periods(in) /
                   (Expr::term("micro_batches", m, "micro-batches") + bubble_periods(in))
             : Expr::term("bubble", 0, "(no pipeline)");
  out.push_back(make_item("pipeline.bubble_fraction",
                          "idle share of the pipeline: (p − 1)/(m + p − 1) for 1F1B",
                          Unit::fraction, bubble_fraction, k_src_bubble));
  const Expr tokens =
      Expr::term("tokens_per_step", static_cast<double>(d.tokens_per_step), "tokens per step");
  const Expr tps = tokens / Expr::term("step_s", step.value(), "s per step");
  out.push_back(make_item("throughput.tokens_per_s", "tokens per second", Unit::tokens_per_s, tps,
                          "tokens per step / step time"));
  out.push_back(make_item("throughput.tokens_per_s_per_gpu", "tokens per second per GPU",
                          Unit::tokens_per_s, tps / Expr::term("gpus", d.world_size, "GPUs"),
                          "tokens per second / GPUs"));
  // Model FLOPs: every stage's forward and backward (no recompute), all replicas.
  double model_flops = 0, executed = 0;
  for (const StageFlops& s : flops) {
    model_flops += s.forward + s.backward;
    executed += s.forward + s.backward + s.recompute;
  }
  const double replicas = static_cast<double>(p.tp) * p.cp * p.dp * m;
  const Expr denom = Expr::term("step_s", step.value(), "s per step") *
                     Expr::term("gpus", d.world_size, "GPUs") *
                     Expr::term("peak_flops", peak, "FLOP/s peak");
  out.push_back(make_item(
      "mfu", "model FLOPs utilization", Unit::fraction,
      Expr::term("model_flops", model_flops * replicas, "model FLOP per step") / denom, k_src_mfu));
  out.push_back(
      make_item("hfu", "hardware FLOPs utilization (with recompute)", Unit::fraction,
                Expr::term("executed_flops", executed * replicas, "executed FLOP per step") / denom,
                k_src_mfu));
  if (in.training.tokens > 0) {
    out.push_back(make_item("time.to_train", "time to train training.tokens", Unit::seconds,
                            Expr::term("tokens", in.training.tokens, "tokens") /
                                Expr::term("tokens_per_s", tps.value(), "tokens/s"),
                            "training.tokens / throughput"));
  }
  return out;
}

}  // namespace trainledger
