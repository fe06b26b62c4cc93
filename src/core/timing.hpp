// The time side of a plan: FLOPs, communication, the step, throughput, checkpoints.
#pragma once

#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger {

// FLOPs of one micro-batch on one GPU of a stage (docs/formulas.md#compute).
struct StageFlops {
  double forward = 0;    // forward pass (matmuls, attention's s² terms, LM head)
  double backward = 0;   // backward pass (2× the trainable matmuls, 1× frozen ones)
  double recompute = 0;  // the forward recomputed under activation recomputation
  // Bytes that memory-bound kernels (norms, activations, softmax, dropout, residual adds,
  // the loss) move through HBM: forward + backward, and for the recomputed forward.
  double elementwise_bytes = 0;
  double recompute_elementwise_bytes = 0;
  Expr forward_expr = Expr::term("none", 0, "FLOP");
};
StageFlops stage_flops(const PlanInput& in, int layers, bool last);

// Per-step communication items comm.dp, comm.tp, comm.pp, comm.cp, comm.ep (those that apply)
// for the worst stage's layers.
std::vector<LineItem> communication_items(const PlanInput& in, const Derived& d, int layers,
                                          std::vector<std::string>& warnings);

// Time items (time.*, pipeline.bubble_fraction, throughput.*, mfu, hfu, ...).
std::vector<LineItem> time_items(const PlanInput& in, const Derived& d,
                                 const std::vector<int>& stage_layers,
                                 const std::vector<LineItem>& communication,
                                 const StageMemory& worst, std::vector<std::string>& warnings);

// Checkpoint size and write time, MTBF, Young's and Daly's intervals, waste, time lost.
std::vector<LineItem> reliability_items(const PlanInput& in, const Derived& d,
                                        const std::vector<LineItem>& time);

}  // namespace trainledger
