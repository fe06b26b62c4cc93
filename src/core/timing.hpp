// The time side of a plan: FLOPs, communication, the step, throughput, checkpoints. Templates
// over the formula's value type (formula.hpp).
#pragma once

#include <string>
#include <vector>

#include "formula.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

// Where warnings go; nullptr in the numbers-only evaluation, which makes no text.
using Warnings = std::vector<std::string>;

// FLOPs of one micro-batch on one GPU of a stage (docs/formulas.md#compute).
struct StageFlops {
  // Model FLOPs (MFU's convention: attention's full s² terms).
  double forward = 0;    // forward pass (matmuls, attention's s² terms, LM head)
  double backward = 0;   // backward pass (2× the trainable matmuls, 1× frozen ones)
  double recompute = 0;  // the forward recomputed under activation recomputation
  // FLOPs executed per pass, by the rate they run at: `gemm` in the layers' linear layers (the
  // precision's peak, FP8 under FP8), `core` in eager attention's s² products (batched
  // matmuls, the whole product) and the LM head (16-bit peak even under FP8).
  double gemm = 0, core = 0;
  double recompute_gemm = 0, recompute_core = 0;
  double attention = 0;  // attention's s² products (all passes, MFU's full s² convention)
  // FLOPs flash attention executes (causal: the unmasked half), at the attention kernel's rate.
  double flash = 0, recompute_flash = 0;
  // Bytes that memory-bound kernels (norms, activations, softmax, dropout, residual adds,
  // the loss) move through HBM: forward + backward, and for the recomputed forward.
  double elementwise_bytes = 0;
  double recompute_elementwise_bytes = 0;
  // Bytes the linear layers' and the LM head's GEMMs read and write at the least (operands and
  // results, each once): time at the HBM rate on top of their FLOPs.
  double gemm_bytes = 0;
  double recompute_gemm_bytes = 0;
  // Host time to dispatch the micro-batch's kernels on this stage, forward and backward (with
  // the recomputed forward; docs/formulas.md#dispatch): the GPU waits when its kernels take
  // less.
  double host_forward_s = 0, host_backward_s = 0;
};
StageFlops stage_flops(const PlanInput& in, int layers, bool last);

// One micro-batch on the stage that sets the pipeline's pace: its forward, and its backward with
// the recompute (zero without compute rates).
struct MicroBatchSplit {
  int stage = 0;
  double forward_s = 0;
  double backward_s = 0;
};
MicroBatchSplit micro_batch_split(const PlanInput& in, const std::vector<int>& stage_layers);

// The stage that sets the pipeline's pace: the most compute per micro-batch (the most layers
// when the step time is not computed).
int pace_stage(const PlanInput& in, const std::vector<int>& stage_layers);

// Per-step communication of one stage (the pace-setting one): its layers, and whether it holds
// the embedding (first) and the LM head (last). Each dimension's typed result and the items
// comm.dp, comm.tp, comm.pp, comm.cp, comm.ep (those that apply).
template <typename V>
struct Comm {
  CommResults dims;
  Items<V> items;
};
template <typename V>
Comm<V> communication(const PlanInput& in, const Derived& d, int layers, bool first, bool last,
                      Warnings* warnings);

// Time items (time.*, pipeline.bubble_fraction, throughput.*, mfu, hfu, ...). `worst_items`:
// the worst stage's ledger at its peak; `offloaded`: its state kept in host memory.
template <typename V>
Items<V> time_items(const PlanInput& in, const Derived& d, const std::vector<int>& stage_layers,
                    const CommResults& comm, const Items<V>& worst_items, const Items<V>& offloaded,
                    Warnings* warnings);

// Checkpoint size and write time, MTBF, Young's and Daly's intervals, waste, time lost.
template <typename V>
Items<V> reliability_items(const PlanInput& in, const Derived& d, const Items<V>& time);

}  // namespace trainledger
