// The step: compute, recompute, exposed communication, the pipeline bubble and the optimizer
// (docs/formulas.md#step); throughput, MFU and HFU.
#include <algorithm>
#include <array>
#include <cmath>

#include "activations.hpp"
#include "memory.hpp"
#include "recipe.hpp"
#include "stage_params.hpp"
#include "state.hpp"
#include "timing.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_compute =
    "FLOPs from the architecture (docs/formulas.md#compute) / (dense peak × compute "
    "efficiency), bytes of element-wise kernels, GEMM operands and FSDP's copies "
    "(docs/formulas.md#fsdp-copies) / achieved HBM rate; the efficiency is assumed per GPU "
    "generation until calibration measures it; NCCL traffic overlapped with the compute holds "
    "one SM per channel while it runs (one CTA per channel: NCCL src/enqueue.cc), so that "
    "stretch's compute runs on SMs − channels (docs/formulas.md#nccl-contention)";
constexpr const char* k_src_bubble =
    "Narayanan et al. 2021 §2.2: 1F1B and GPipe idle (p − 1) micro-batch times per step, "
    "interleaved (p − 1)/v; ZB-H1 about (p − 1)/3 (Qi et al. 2023)";
constexpr const char* k_src_overlap =
    "unit-by-unit overlap (parallel.overlap_*): each bucket or gathered layer of DP/ZeRO "
    "traffic hides behind the compute of the one before it, in the pass it belongs to (ZeRO-3 "
    "gathers in forward, gradients in backward); the first unit of each pass and ZeRO-1/2's "
    "parameter all-gather are exposed. TP overlap (Wang et al. 2022, decomposition into tp "
    "chunks) leaves one chunk of each collective exposed; the context-parallel ring hides "
    "behind attention; expert all-to-alls and pipeline sends are exposed";
constexpr const char* k_src_optimizer =
    "the optimizer step is memory-bound: a fused kernel reads and writes the master weights and "
    "optimizer state and reads the gradients once; torch.optim's foreach and for-loop steps "
    "stream the operands of each element-wise op (AdamW 18 state + 3 gradient accesses per "
    "parameter, torch/optim/adam.py _multi_tensor_adam; SGD with momentum 7 + 1) (bytes / "
    "achieved HBM bandwidth, the same rate as element-wise kernels)";
constexpr const char* k_src_activation_offload =
    "Megatron-Core --cpu-offloading-num-layers with Transformer Engine's cpu_offload.py: the "
    "first k layers' saved tensors copied to the host on one stream beside compute; the "
    "compute waits max(0, k·c − (N − 2)·t) per pass (docs/formulas.md#activation-offload)";
constexpr const char* k_src_offload =
    "ZeRO-Offload (Ren et al. 2021, §4): gradients reach the host during backward (hidden), "
    "the host updates the offloaded state (memory-bound: the node's DRAM streams every rank's "
    "master weights and optimizer state in and out and reads the gradients, bytes / "
    "cluster.host_memory_bandwidth), and the updated 16-bit parameters return over PCIe; with "
    "the parameters offloaded too (ZeRO-Infinity) each micro-batch fetches the stage's "
    "parameters in forward and in backward, layer by layer behind the compute";
constexpr const char* k_src_host =
    "the host dispatches every kernel (eager PyTorch: cluster.op_overhead per forward op from "
    "Python, cluster.launch_overhead per backward kernel of the autograd engine or compiled "
    "kernel; one launch per layer and pass under CUDA graphs) and runs ahead of the GPU; a "
    "micro-batch whose kernels take less GPU time than their dispatch waits the difference "
    "(docs/formulas.md#dispatch)";
constexpr const char* k_src_mfu =
    "Chowdhery et al. 2022 (PaLM) App. B: MFU counts the model's FLOPs without recomputation; "
    "HFU counts the FLOPs executed";

// The dense peak of the precision's GEMMs (the rules require it), and of attention and the LM
// head, which stay in bf16 under FP8 (Transformer Engine and Megatron-LM cast only the linear
// layers: te.Linear / te.LayerNormLinear; DotProductAttention and the output layer run in
// bf16).
// The 4-bit recipe's GEMMs run at the fp4 peak (NVFP4 tensor cores: twice FP8's on B200,
// three times on B300/GB300).
double peak_rate(const PlanInput& in) {
  if (in.training.recipe == Recipe::nvfp4) return in.cluster.gpu.peak_flops.fp4;
  return peak_of(in.cluster.gpu.peak_flops, in.training.precision);
}

double core_peak(const PlanInput& in) {
  const PeakFlops& f = in.cluster.gpu.peak_flops;
  return in.training.precision == DType::fp8 ? f.bf16 : peak_rate(in);
}

struct Rates {
  double gemm = 0;  // FLOP/s achieved in the linear layers
  double core = 0;  // FLOP/s achieved in eager attention and the LM head
  double attn = 0;  // FLOP/s flash attention achieves on the FLOPs it executes
  double hbm = 0;   // B/s achieved by memory-bound kernels
};

template <typename V>
V bubble_periods(const PlanInput& in) {
  const ParallelSpec& p = in.parallel;
  const V idle = V::term("stages", p.pp, "stages") - V::constant(1);
  switch (p.schedule) {
    case Schedule::interleaved:
      return idle / V::term("virtual_stages", p.virtual_stages, "chunks");
    case Schedule::zb_h1:
      return idle / V::constant(3);
    case Schedule::dualpipev:
      // (PP/2 − 1)(F&B + B − 3W) over PP = 2p half-stage chunks (deepseek-ai/DualPipe README):
      // with a chunk's F = T/6, B = 2F, W = F and F&B = F + B, (p − 1)·T/3.
      return idle / V::constant(3);
    default:
      return idle;
  }
}

// The one rate of memory-bound kernels (element-wise ops and the optimizer step): HBM
// bandwidth × the achieved share.
template <typename V>
V hbm_rate(const PlanInput& in) {
  return input<V>(in, "cluster.memory_bandwidth", "memory_bandwidth",
                  in.cluster.gpu.memory_bandwidth, "B/s HBM") *
         input<V>(in, "cluster.memory_efficiency", "memory_efficiency",
                  in.cluster.memory_efficiency, "efficiency");
}

// Traffic that comes in `units` equal units, each overlapping the compute of the unit before
// it (a prefetched layer, a bucket reduced while the next is computed): the first unit waits,
// and each later one exposes what its compute cannot hide.
double pipelined(double comm, double compute, double units) {
  if (comm <= 0) return 0;
  const double n = std::max(1.0, units);
  const double g = comm / n;
  const double c = compute / n;
  return g + (n - 1) * std::max(0.0, g - c);
}

// Exposed data-parallel time per step: ZeRO-3's forward gathers against each micro-batch's
// forward, its backward gathers against the backward, the gradient reductions against the
// backward of the micro-batches that synchronize, and the after-step gather in full.
double dp_exposed(const PlanInput& in, const CommDim& dp, double forward_s, double backward_s,
                  double m, double syncs) {
  if (!dp.present) return 0;
  if (!in.parallel.overlap_dp) return dp.time_s;
  const double n = dp.units;
  const double every = dp.backward_s / m;
  const double sync = dp.sync_s / syncs;
  // The after-step parameter gather either waits, or hides behind the next step's first forward.
  const double tail =
      in.parallel.overlap_param_gather ? pipelined(dp.tail_s, forward_s, n) : dp.tail_s;
  return m * pipelined(dp.forward_s / m, forward_s, n) +
         (m - syncs) * pipelined(every, backward_s, n) +
         syncs * pipelined(every + sync, backward_s, n) + tail;
}

// The slowest stage sets the pipeline's pace.
struct Pace {
  StageFlops slow_flops;  // the slowest stage's
  // Every stage's forward and backward (model FLOPs), and with the recompute (executed), summed
  // in stage order.
  double model_flops = 0, executed_flops = 0;
  int slow = 0;
  double slow_s = -1;    // one micro-batch on the slowest stage
  double forward_s = 0;  // its forward (the rest is the backward with its recompute)
};

// One micro-batch's compute on a stage: its GEMMs, attention and LM head, element-wise kernels.
double micro_batch_s(const StageFlops& f, const Rates& r) {
  return (f.gemm + f.recompute_gemm) / r.gemm + (f.core + f.recompute_core) / r.core +
         (f.flash + f.recompute_flash) / r.attn +
         (r.hbm > 0 ? (f.elementwise_bytes + f.recompute_elementwise_bytes + f.gemm_bytes +
                       f.recompute_gemm_bytes) /
                          r.hbm
                    : 0.0);
}

double attention_efficiency(const PlanInput& in) {
  return in.cluster.attention_efficiency > 0 ? in.cluster.attention_efficiency
                                             : in.cluster.matmul_efficiency;
}

// The share of its peak a GEMM of the plan's precision reaches: fp8 GEMMs a smaller share of
// theirs than bf16 GEMMs (cluster.fp8_matmul_ratio, measured by calibrate probe).
double gemm_efficiency(const PlanInput& in) {
  return in.cluster.matmul_efficiency *
         (in.training.precision == DType::fp8 ? in.cluster.fp8_matmul_ratio : 1.0);
}

Rates rates_of(const PlanInput& in) {
  const double peak = peak_rate(in);
  return Rates{peak * gemm_efficiency(in), core_peak(in) * in.cluster.matmul_efficiency,
               core_peak(in) * attention_efficiency(in), hbm_rate<Num>(in).value()};
}

// One micro-batch's attention (s² products, all passes) on the slowest stage.
double attention_s(const StageFlops& f, const Rates& r) {
  return f.flash > 0 ? (f.flash + f.recompute_flash) / r.attn : f.attention / r.core;
}

// stage_flops of each stage, computed once per layer count for the stages before the last
// (they differ only in their layers; an even split has one count).
class FlopsByLayers {
 public:
  explicit FlopsByLayers(const PlanInput& in) : m_in(in) {}
  StageFlops of(int layers, bool last) {
    if (last) return stage_flops(m_in, layers, true);
    for (int i = 0; i < m_size; ++i)
      if (m_layers[i] == layers) return m_flops[i];
    const StageFlops f = stage_flops(m_in, layers, false);
    if (m_size < static_cast<int>(m_layers.size())) {
      m_layers[m_size] = layers;
      m_flops[m_size++] = f;
    }
    return f;
  }

 private:
  const PlanInput& m_in;
  std::array<int, 4> m_layers{};
  std::array<StageFlops, 4> m_flops{};
  int m_size = 0;
};

Pace pace(const PlanInput& in, const std::vector<int>& stage_layers, const Rates& r) {
  Pace p;
  const int pp = static_cast<int>(stage_layers.size());
  FlopsByLayers by_layers(in);
  for (int s = 0; s < pp; ++s) {
    const StageFlops f = by_layers.of(stage_layers[s], s == pp - 1);
    p.model_flops += f.forward + f.backward;
    p.executed_flops += f.forward + f.backward + f.recompute;
    const double t = micro_batch_s(f, r);
    if (t > p.slow_s) {
      p.slow_s = t;
      p.slow = s;
      p.slow_flops = f;
    }
  }
  const StageFlops& f = p.slow_flops;
  const double flops = f.forward + f.backward + f.recompute;
  p.forward_s = flops > 0 ? p.slow_s * f.forward / flops : 0;
  return p;
}

// PyTorch FSDP's copies around its collectives, per GPU per step (docs/formulas.md#fsdp-copies),
// time on the compute stream's HBM. FSDP2 (torch/distributed/fsdp/_fully_shard/
// _fsdp_collectives.py): foreach_all_gather_copy_out waits for the all-gather on the current
// stream and copies the gathered buffer into each parameter's unsharded tensor
// (split_with_sizes_copy): the all-gather's output read and written, 2·S per call;
// foreach_reduce copies the unsharded 16-bit gradients into the reduce-scatter input in the
// reduce dtype (foreach_reduce_scatter_copy_in, torch._chunk_cat). FSDP1
// (torch/distributed/fsdp/_runtime_utils.py) gathers into its flat parameter without a copy;
// _post_backward_hook casts the flat gradient to the reduce dtype where it differs and
// _reduce_grad divides it in place before the reduce-scatter (_div_if_needed with the
// predivide factor, above 1 from two ranks): 2·S per call.
double fsdp_copy_bytes(const PlanInput& in, const CommDim& dp) {
  if (in.parallel.zero != 3 || !dp.present) return 0;
  if (in.training.framework != Framework::pytorch && in.training.framework != Framework::hf)
    return 0;
  const double grad = in.training.precision == DType::fp32 ? 4.0 : 2.0;
  const double reduce = dtype_bytes(in.training.reduce_dtype);
  const bool fsdp2 = in.parallel.fsdp_version == 2;
  double bytes = 0;
  for (int i = 0; i < dp.n_calls; ++i) {
    const CollCall& c = dp.calls[static_cast<std::size_t>(i)];
    const double s = c.message_bytes * c.calls_per_step;
    if (c.kind == CollKind::all_gather && fsdp2) bytes += 2 * s;
    if (c.kind != CollKind::reduce_scatter) continue;
    if (fsdp2)
      bytes += s * (grad + reduce) / reduce;
    else
      bytes += (grad != reduce ? s * (grad + reduce) / reduce : 0.0) + 2 * s;
  }
  return bytes;
}

// Per-step exposed traffic on the critical path, by dimension.
struct Exposed {
  double tp_s = 0, ep_s = 0, cp_s = 0, pp_s = 0, dp_s = 0;
};

Exposed exposed_traffic(const PlanInput& in, const Derived& d, const CommResults& comm,
                        const Pace& pc, const Rates& r) {
  const ParallelSpec& p = in.parallel;
  const double m = static_cast<double>(d.grad_accum);
  const StageFlops& f = pc.slow_flops;
  Exposed e;
  // Decomposed TP collectives (Megatron/Transformer Engine TP comm overlap, PyTorch AsyncTP)
  // overlap all but one of their tp chunks.
  e.tp_s = p.overlap_tp ? comm[Dim::tp].time_s / p.tp : comm[Dim::tp].time_s;
  e.ep_s = comm[Dim::ep].time_s;
  // The ring passes the next K/V block while attention works on the current one.
  e.cp_s = p.overlap_cp ? std::max(0.0, comm[Dim::cp].time_s - m * attention_s(f, r))
                        : comm[Dim::cp].time_s;
  e.pp_s = comm[Dim::pp].time_s;
  const double syncs = p.grad_sync == GradSync::every_micro_batch ? m : 1.0;
  e.dp_s = dp_exposed(in, comm[Dim::dp], pc.forward_s, pc.slow_s - pc.forward_s, m, syncs);
  return e;
}

// Seconds of NCCL traffic per step that run beside the compute: what overlap hides of the
// DP/ZeRO collectives and of CP's ring exchange. TP's overlapped chunks are not NCCL's
// (Transformer Engine's userbuffers, PyTorch's symmetric memory); EP and PP traffic is exposed.
double nccl_hidden_s(const PlanInput& in, const CommResults& comm, const Exposed& ex) {
  double hidden = 0;
  if (comm[Dim::dp].present && in.parallel.overlap_dp)
    hidden += std::max(0.0, comm[Dim::dp].time_s - ex.dp_s);
  if (comm[Dim::cp].present && in.parallel.overlap_cp)
    hidden += std::max(0.0, comm[Dim::cp].time_s - ex.cp_s);
  return hidden;
}

// Exposed communication rests on the links' bandwidths and latencies: measured when a
// calibration profile gave one of those the plan's traffic uses, assumed otherwise.
Kind comm_kind(const PlanInput& in, const CommResults& comm) {
  const bool gather_given = in.cluster.intra_node_gather_bandwidth > 0;
  for (const CommDim& d : comm.dims) {
    if (!d.present) continue;
    for (int i = 0; i < d.n_calls; ++i) {
      const CollCall& c = d.calls[static_cast<std::size_t>(i)];
      const bool reduce = c.kind == CollKind::all_reduce || c.kind == CollKind::tree_all_reduce;
      const char* keys[3] = {
          c.inter_node              ? "cluster.inter_node_bandwidth"
          : !reduce && gather_given ? "cluster.intra_node_gather_bandwidth"
                                    : "cluster.intra_node_bandwidth",
          c.inter_node ? "cluster.inter_node_latency" : "cluster.intra_node_latency",
          c.inter_node ? "cluster.inter_node_simple_latency" : "cluster.intra_node_simple_latency"};
      for (const char* k : keys)
        if (in.provenance.of(k) == Source::calibration) return Kind::measured;
    }
  }
  return Kind::assumed;
}

// Host time of the optimizer step's loop over the GPU's parameter tensors
// (docs/formulas.md#dispatch): torch.optim's for-loop dispatches a few ops per tensor from Python
// (adamw.py _single_tensor_adamw: the weight decay, lerp, mul and addcmul, sqrt, div and
// add, addcdiv); foreach ops launch one kernel per chunk of tensors
// (aten/src/ATen/native/cuda/MultiTensorApply.cuh: at most 48 tensors of depth 3 or 320
// blocks of 65,536 elements per launch), a fused optimizer one such kernel in all.
double optimizer_host_s(const PlanInput& in, double tensors, double elements) {
  const ClusterSpec& c = in.cluster;
  double ops = 8;
  if (in.training.optimizer == Optimizer::sgd) ops = 2;
  if (in.training.optimizer == Optimizer::sgd_momentum) ops = 3;
  const double chunks = std::ceil(tensors / 48) + std::ceil(elements / (320.0 * 65536));
  switch (in.training.optimizer_impl) {
    case OptimizerImpl::for_loop:
      return tensors * ops * c.op_overhead;
    case OptimizerImpl::foreach:
      return ops * (c.op_overhead + chunks * c.launch_overhead);
    case OptimizerImpl::fused:
      return c.op_overhead + chunks * c.launch_overhead;
  }
  return 0;
}

// The optimizer step streams the state it updates through HBM; when the host dispatches its
// kernels more slowly, the step waits for the host.
template <typename V>
V optimizer_time(const PlanInput& in, const Items<V>& worst_items, double tensors) {
  double state_bytes = 0;
  for (const auto& i : worst_items)
    if (info(i.item).optimizer_io) state_bytes += i.value;
  if (in.cluster.gpu.memory_bandwidth <= 0)
    return V::term("optimizer_s", 0, "s (no memory_bandwidth given)");
  const TrainingSpec& t = in.training;
  const double m_bytes = value_of(worst_items, ItemId::optimizer_m);
  const double elements = m_bytes / dtype_bytes(t.optimizer_dtype);
  // A fused kernel reads the state once and writes it back. torch.optim without it runs one
  // element-wise kernel per operation, each streaming its operands (torch/optim/adam.py
  // _multi_tensor_adam, decoupled weight decay; s the state's bytes, g the gradient's):
  // mul_(params) 2s, lerp_(m, grads) 2s + g, mul_(v) 2s, addcmul_(v, grads, grads) 2s + 2g,
  // sqrt(v) 2s, div_ 2s, add_(eps) 2s, addcdiv_(params, m, denom) 4s = 18s + 3g, 84 B per fp32
  // parameter (one H200 measured 33.3 ms for 1.49 B parameters: 3.75 TB/s,
  // tests/reference/replica/h200-20261204); torch/optim/sgd.py _multi_tensor_sgd with momentum:
  // mul_(buf) 2s, add_(buf, grads) 2s + g, add_(params, buf) 3s = 7s + g; without it 2s + g.
  const double sb = dtype_bytes(t.optimizer_dtype), gb = dtype_bytes(t.grad_dtype);
  double per_element = 0;
  if (t.optimizer_impl != OptimizerImpl::fused && elements > 0) {
    if (t.optimizer == Optimizer::adamw) per_element = 18 * sb + 3 * gb;
    if (t.optimizer == Optimizer::sgd_momentum) per_element = 7 * sb + gb;
  }
  const V stream =
      per_element > 0
          ? V::term("elements", elements, "parameters updated") *
                V::term("op_bytes", per_element, "B moved per parameter by the unfused ops") /
                hbm_rate<V>(in)
          : V::constant(2) * V::term("state_bytes", state_bytes, "B of state") / hbm_rate<V>(in);
  const double host = optimizer_host_s(in, tensors, elements);
  if (!(host > stream.value())) return stream;
  return stream + V::term("optimizer_host_s", host - stream.value(),
                          "s the optimizer's kernels wait for the host's loop");
}

// Host offload: the host optimizer step and the PCIe transfers compute does not hide.
template <typename V>
V offload_time(const PlanInput& in, const Derived& d, const Items<V>& offloaded, int layers,
               double forward_s, double backward_s) {
  const ParallelSpec& p = in.parallel;
  if (p.offload == Offload::none || offloaded.empty())
    return V::term("offload_s", 0, "s (nothing offloaded)");
  double state = 0;
  for (const auto& i : offloaded)
    if (info(i.item).optimizer_io) state += i.value;
  const int ranks = std::min(in.cluster.gpus_per_node, d.world_size);
  const V host_bw = input<V>(in, "cluster.host_memory_bandwidth", "host_memory_bandwidth",
                             in.cluster.host_memory_bandwidth, "B/s host DRAM");
  const V pcie = input<V>(in, "cluster.pcie_bandwidth", "pcie_bandwidth", in.cluster.pcie_bandwidth,
                          "B/s PCIe");
  V t = V::constant(2) * V::term("offloaded_state", state, "B of offloaded state per GPU") *
        V::term("ranks_per_node", ranks, "ranks sharing the host") / host_bw;
  const double params_on_host = value_of(offloaded, ItemId::params);
  const double param_bytes =
      dtype_bytes(in.training.precision == DType::fp8 ? DType::bf16 : in.training.precision);
  if (params_on_host <= 0) {
    // The optimizer's shard of updated 16-bit parameters goes back to the GPU.
    const double master = value_of(offloaded, ItemId::master);
    const double m =
        value_of(offloaded, ItemId::optimizer_m) + value_of(offloaded, ItemId::optimizer_state);
    const double elements = master > 0 ? master / 4 : m / dtype_bytes(in.training.optimizer_dtype);
    t = t + V::term("updated_params", elements * param_bytes, "B of updated parameters") / pcie;
  } else {
    // Every micro-batch fetches the stage's parameters for its forward and its backward.
    const double mb = static_cast<double>(d.grad_accum);
    const double fetch = params_on_host / in.cluster.pcie_bandwidth;
    const double units = std::max(1, layers) + 1.0;
    const double exposed =
        mb * (pipelined(fetch, forward_s, units) + pipelined(fetch, backward_s, units));
    t = t + V::term("fetch_s", exposed, "s of parameter fetches not hidden");
  }
  return t;
}

// Megatron-Core's activation offloading (Transformer Engine cpu_offload.py): the first k of N
// layers' saved tensors go to the host during the forward and come back ahead of the backward,
// on one copy stream beside compute. Before layer N − k + i runs forward, layer i's copy must be
// done (at most N − k layers' activations on the GPU); with uniform layers (copy c, compute t
// each) the forward waits max(0, k·c − (N − 2)·t); the reloads, started N − k − 1 layers ahead
// of each backward, wait the same with the backward's t.
template <typename V>
V activation_offload_time(const PlanInput& in, const Derived& d, const Items<V>& worst_items,
                          double forward_s, double backward_s) {
  const int k = in.training.activation_offload_layers;
  const int n = offload_stage_layers(in);
  if (k <= 0 || k >= n || in.cluster.pcie_bandwidth <= 0)
    return V::term("activation_copies_s", 0, "s (no activations offloaded)");
  // k copies of one layer's activations over the host link.
  const V copies =
      V::term("offloaded_layers", k, "layers offloaded (k)") *
      V::term("layer_activations", value_of(worst_items, ItemId::activations) / (n - k),
              "B of one layer's activations") /
      input<V>(in, "cluster.pcie_bandwidth", "pcie_bandwidth", in.cluster.pcie_bandwidth,
               "B/s host link");
  auto wait = [&](double pass_s, const char* key, const char* what) {
    const V w = copies - V::term(key, (n - 2) * pass_s / n, what);
    return w.value() > 0 ? w : V::term(key, 0, "s (the copies hide behind the compute)");
  };
  return V::term("micro_batches", static_cast<double>(d.grad_accum), "micro-batches") *
         (wait(forward_s, "forward_cover_s", "s of N − 2 layers' forward") +
          wait(backward_s, "backward_cover_s", "s of N − 2 layers' backward"));
}

// Throughput, MFU and HFU from the step time.
template <typename V>
void throughput_items(const PlanInput& in, const Derived& d, const Pace& pc, double peak,
                      double step_s, Items<V>& out) {
  const V tokens =
      V::term("tokens_per_step", static_cast<double>(d.tokens_per_step), "tokens per step");
  const V tps = tokens / V::term("step_s", step_s, "s per step");
  out.push_back(make(ItemId::throughput_tokens_per_s, "tokens per second", Unit::tokens_per_s, tps,
                     "tokens per step / step time"));
  out.push_back(make(ItemId::throughput_tokens_per_s_per_gpu, "tokens per second per GPU",
                     Unit::tokens_per_s, tps / V::term("gpus", d.world_size, "GPUs"),
                     "tokens per second / GPUs"));
  // Model FLOPs: every stage's forward and backward (no recompute), all replicas.
  const double model_flops = pc.model_flops, executed = pc.executed_flops;
  const ParallelSpec& p = in.parallel;
  const double replicas = static_cast<double>(p.tp) * p.cp * p.dp * d.grad_accum;
  const V denom = V::term("step_s", step_s, "s per step") * V::term("gpus", d.world_size, "GPUs") *
                  V::term("peak_flops", peak, "FLOP/s peak");
  out.push_back(make(ItemId::mfu, "model FLOPs utilization", Unit::fraction,
                     V::term("model_flops", model_flops * replicas, "model FLOP per step") / denom,
                     k_src_mfu));
  out.push_back(make(
      ItemId::hfu, "hardware FLOPs utilization (with recompute)", Unit::fraction,
      V::term("executed_flops", executed * replicas, "executed FLOP per step") / denom, k_src_mfu));
  if (in.training.tokens > 0) {
    out.push_back(make(ItemId::time_to_train, "time to train training.tokens", Unit::seconds,
                       V::term("tokens", in.training.tokens, "tokens") /
                           V::term("tokens_per_s", tps.value(), "tokens/s"),
                       "training.tokens / throughput"));
  }
}

}  // namespace

MicroBatchSplit micro_batch_split(const PlanInput& in, const std::vector<int>& stage_layers) {
  MicroBatchSplit out;
  if (in.model.count_only || peak_rate(in) <= 0 || stage_layers.empty()) return out;
  const Pace pc = pace(in, stage_layers, rates_of(in));
  out.stage = pc.slow;
  out.forward_s = pc.forward_s;
  out.backward_s = pc.slow_s - pc.forward_s;
  return out;
}

int pace_stage(const PlanInput& in, const std::vector<int>& stage_layers) {
  if (in.model.count_only || peak_rate(in) <= 0)
    return static_cast<int>(std::max_element(stage_layers.begin(), stage_layers.end()) -
                            stage_layers.begin());
  return pace(in, stage_layers, rates_of(in)).slow;
}

template <typename V>
Items<V> time_items(const PlanInput& in, const Derived& d, const std::vector<int>& stage_layers,
                    const CommResults& comm, const Items<V>& worst_items, const Items<V>& offloaded,
                    Warnings* warnings) {
  Items<V> out;
  if (in.model.count_only) return out;
  const double peak = peak_rate(in);
  if (peak <= 0) {
    if (warnings)
      warnings->push_back("cluster: no peak FLOP/s for " +
                          std::string(precision_name(in.training)) +
                          " (cluster.peak_flops): step time is not computed");
    return out;
  }
  // Traffic over a link with no bandwidth has no time: a step without it would be optimistic
  // (communication's own warning names the key).
  for (const CommDim& dim : comm.dims)
    if (dim.present && !dim.timed) return out;
  const Rates rates = rates_of(in);
  const double hbm = rates.hbm;
  const int pp = static_cast<int>(stage_layers.size());
  const double m = static_cast<double>(d.grad_accum);
  const Pace pc = pace(in, stage_layers, rates);
  const StageFlops& f = pc.slow_flops;
  const V efficiency = input<V>(in, "cluster.matmul_efficiency", "matmul_efficiency",
                                in.cluster.matmul_efficiency, "efficiency");
  V rate_e = input<V>(in, "cluster.peak_flops", "peak_flops", peak, "FLOP/s peak") * efficiency;
  if (in.training.precision == DType::fp8)
    rate_e = rate_e * input<V>(in, "cluster.fp8_matmul_ratio", "fp8_matmul_ratio",
                               in.cluster.fp8_matmul_ratio, "fp8 GEMMs' share over bf16's");
  const V core_e = in.training.precision == DType::fp8
                       ? input<V>(in, "cluster.peak_flops", "peak_flops_bf16", core_peak(in),
                                  "FLOP/s bf16 peak") *
                             efficiency
                       : rate_e;
  const V hbm_e = hbm_rate<V>(in);
  const V mb = V::term("micro_batches", m, "micro-batches");
  const bool flash = f.flash > 0;
  V compute = mb * (V::term("gemm_flops", f.gemm, "FLOP in linear layers") / rate_e +
                    V::term("core_flops", f.core,
                            flash ? "FLOP in the LM head" : "FLOP in attention and LM head") /
                        core_e);
  V recompute =
      mb *
      (V::term("recompute_gemm_flops", f.recompute_gemm, "FLOP recomputed in linear layers") /
           rate_e +
       V::term("recompute_core_flops", f.recompute_core, "FLOP recomputed in attention") / core_e);
  if (flash) {
    const V attn_e =
        input<V>(in, "cluster.peak_flops", "peak_flops_bf16", core_peak(in), "FLOP/s bf16 peak") *
        (in.cluster.attention_efficiency > 0
             ? input<V>(in, "cluster.attention_efficiency", "attention_efficiency",
                        in.cluster.attention_efficiency, "attention efficiency")
             : input<V>(in, "cluster.matmul_efficiency", "attention_efficiency",
                        in.cluster.matmul_efficiency, "efficiency (matmul_efficiency)"));
    compute = compute + mb *
                            V::term("attention_flops", f.flash,
                                    "FLOP flash attention executes (causal: half of s²)") /
                            attn_e;
    if (f.recompute_flash > 0)
      recompute = recompute + mb *
                                  V::term("recompute_attention_flops", f.recompute_flash,
                                          "FLOP flash attention executes again") /
                                  attn_e;
  }
  if (hbm > 0) {
    compute = compute + mb *
                            (V::term("elementwise_bytes", f.elementwise_bytes, "B element-wise") +
                             V::term("gemm_bytes", f.gemm_bytes, "B GEMM operands and results")) /
                            hbm_e;
    recompute = recompute + mb *
                                (V::term("recompute_elementwise_bytes",
                                         f.recompute_elementwise_bytes, "B element-wise") +
                                 V::term("recompute_gemm_bytes", f.recompute_gemm_bytes,
                                         "B GEMM operands and results")) /
                                hbm_e;
    const double copies = fsdp_copy_bytes(in, comm[Dim::dp]);
    if (copies > 0)
      compute = compute + V::term("fsdp_copy_bytes", copies,
                                  "B FSDP copies its gathered parameters out and its gradients "
                                  "into the reduce-scatter input") /
                              hbm_e;
  } else if (warnings) {
    warnings->push_back("cluster: no memory_bandwidth: element-wise kernels are not timed");
  }
  const Exposed ex = exposed_traffic(in, d, comm, pc, rates);
  // NCCL's collectives that run beside the compute (overlapped DP/ZeRO traffic, CP's ring
  // exchange) each hold one SM per channel for as long as they run: the compute kernels of
  // that stretch have SMs − channels SMs (docs/formulas.md#nccl-contention).
  const double hidden = nccl_hidden_s(in, comm, ex);
  const int sms = in.cluster.gpu.sms;
  if (hidden > 0 && sms > in.cluster.nccl_channels) {
    const V channels = input<V>(in, "cluster.nccl_channels", "nccl_channels",
                                in.cluster.nccl_channels, "NCCL channels (one SM each)");
    compute = compute + V::term("nccl_hidden_s", hidden, "s of NCCL traffic beside the compute") *
                            channels /
                            (input<V>(in, "cluster.gpu_sms", "gpu_sms", sms, "SMs") - channels);
  }
  out.push_back(make(
      ItemId::time_compute,
      [&] { return "compute, slowest stage (" + std::to_string(pc.slow) + ")"; }, Unit::seconds,
      compute, k_src_compute, Kind::estimated));
  out.push_back(make(ItemId::time_recompute, "activation recomputation", Unit::seconds, recompute,
                     k_src_compute));
  const V exposed = V::term("tp_s", ex.tp_s, "s TP") + V::term("ep_s", ex.ep_s, "s EP") +
                    V::term("cp_s", ex.cp_s, "s CP") + V::term("pp_s", ex.pp_s, "s PP") +
                    V::term("dp_s", ex.dp_s, "s DP");
  out.push_back(make(ItemId::time_comm_exposed, "communication not hidden by compute",
                     Unit::seconds, exposed, k_src_overlap, comm_kind(in, comm)));
  // The host runs ahead of the GPU while the GPU's kernels take longer than their dispatch;
  // when a pass's kernels take less, the GPU waits for the host the difference. A forward
  // that outlasts its dispatch leaves the host that much ahead for the backward.
  const double comm_mb = (ex.tp_s + ex.ep_s + ex.cp_s) / m;
  const double gpu_forward = pc.forward_s, gpu_backward = pc.slow_s - pc.forward_s + comm_mb;
  const double lead = std::max(0.0, gpu_forward - f.host_forward_s);
  const double host_wait = std::max(0.0, f.host_forward_s - gpu_forward) +
                           std::max(0.0, f.host_backward_s - gpu_backward - lead);
  const V host =
      mb * V::term("host_wait_s", host_wait, "s per micro-batch the GPU waits for kernel dispatch");
  out.push_back(make(ItemId::time_host, "host dispatch the GPU waits for", Unit::seconds, host,
                     k_src_host, Kind::assumed));
  // One micro-batch's time on the slowest stage, with its exposed TP/EP/CP traffic and host
  // wait.
  const V per_mb = V::term("micro_batch_s", pc.slow_s, "s per micro-batch") +
                   V::term("per_micro_batch_comm", (ex.tp_s + ex.ep_s + ex.cp_s) / m,
                           "s exposed per micro-batch") +
                   V::term("host_wait_s", host_wait, "s host wait per micro-batch");
  const V bubble =
      pp > 1 ? bubble_periods<V>(in) * per_mb : V::term("bubble_s", 0, "s (no pipeline)");
  out.push_back(make(ItemId::time_bubble, "pipeline bubble", Unit::seconds, bubble, k_src_bubble));
  // The stage's parameter tensors: its layers', the embedding on the first and the final norm
  // and the head on the last.
  const double tensors =
      *std::max_element(stage_layers.begin(), stage_layers.end()) * layer_param_tensors(in) + 3;
  const V optimizer = optimizer_time<V>(in, worst_items, tensors);
  out.push_back(make(ItemId::time_optimizer, "optimizer step", Unit::seconds, optimizer,
                     k_src_optimizer, Kind::estimated));
  V offload = offload_time<V>(in, d, offloaded, stage_layers[pc.slow], pc.forward_s,
                              pc.slow_s - pc.forward_s);
  const bool activations_out = in.training.activation_offload_layers > 0;
  if (activations_out) {
    const V copies =
        activation_offload_time<V>(in, d, worst_items, pc.forward_s, pc.slow_s - pc.forward_s);
    offload = in.parallel.offload == Offload::none ? copies : offload + copies;
  }
  const bool offloading =
      (in.parallel.offload != Offload::none && !offloaded.empty()) || activations_out;
  if (offloading)
    out.push_back(
        make(ItemId::time_offload,
             !activations_out ? "host offload (host optimizer step, PCIe)"
             : in.parallel.offload == Offload::none
                 ? "host offload (activation copies the compute waits for)"
                 : "host offload (host optimizer step, PCIe, activation copies)",
             Unit::seconds, offload,
             in.parallel.offload == Offload::none ? k_src_activation_offload : k_src_offload,
             Kind::assumed));
  V step = V::term("compute_s", compute.value(), "s compute") +
           V::term("recompute_s", recompute.value(), "s recompute") +
           V::term("exposed_s", exposed.value(), "s exposed communication") +
           V::term("host_s", host.value(), "s waiting for the host") +
           V::term("bubble_s", bubble.value(), "s bubble") +
           V::term("optimizer_s", optimizer.value(), "s optimizer");
  if (offloading) step = step + V::term("offload_s", offload.value(), "s host offload");
  out.push_back(make(ItemId::time_step, "time per optimizer step", Unit::seconds, step,
                     "the sum of the step's parts (docs/formulas.md#step)"));
  const V bubble_fraction =
      pp > 1 ? bubble_periods<V>(in) /
                   (V::term("micro_batches", m, "micro-batches") + bubble_periods<V>(in))
             : V::term("bubble", 0, "(no pipeline)");
  out.push_back(make(ItemId::pipeline_bubble_fraction,
                     "idle share of the pipeline: (p − 1)/(m + p − 1) for 1F1B", Unit::fraction,
                     bubble_fraction, k_src_bubble));
  throughput_items<V>(in, d, pc, peak, step.value(), out);
  return out;
}

template Items<Expr> time_items<Expr>(const PlanInput&, const Derived&, const std::vector<int>&,
                                      const CommResults&, const Items<Expr>&, const Items<Expr>&,
                                      Warnings*);
template Items<Num> time_items<Num>(const PlanInput&, const Derived&, const std::vector<int>&,
                                    const CommResults&, const Items<Num>&, const Items<Num>&,
                                    Warnings*);

}  // namespace trainledger
