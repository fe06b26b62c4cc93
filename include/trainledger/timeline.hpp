// The pipeline schedule as a timeline (docs/formulas.md#pipeline): which micro-batch each stage
// runs when, for gpipe, 1f1b, interleaved 1F1B and zb-h1, by simulating each stage's fixed op
// order against the ops it waits for. Charts draw it; the step's bubble stays the formula's.
#pragma once

#include <vector>

#include "trainledger/plan.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

enum class OpKind : char { forward = 'F', backward = 'B', weight = 'W' };

struct PipelineOp {
  int stage = 0;
  int micro_batch = 0;
  int chunk = 0;  // virtual stage on this device (interleaved), else 0
  OpKind kind = OpKind::forward;
  double start_s = 0;
  double end_s = 0;
};

// Every op of `micro_batches` micro-batches on `pp` stages; `forward_s` and `backward_s` are one
// micro-batch's forward and backward on one stage (all its virtual stages). zb-h1 splits the
// backward into the input gradient (B) and the weight gradient (W), half each, and defers the
// first W's of each stage into its cooldown. Empty when the schedule cannot run (interleaved
// with micro-batches not a multiple of pp), and past pp 4,096, 100,000 micro-batches or 2^24
// ops (3 × micro-batches × virtual stages × pp).
std::vector<PipelineOp> pipeline_timeline(int pp, int micro_batches, Schedule schedule,
                                          int virtual_stages, double forward_s, double backward_s);

// The schedule a plan's charts draw: its first max(2·pp, 8) micro-batches (a multiple of pp for
// the interleaved schedule), each op as long as one micro-batch's forward, or backward with its
// recompute, on the slowest stage (the FLOPs and bytes of each pass at the plan's rates, as the
// step's compute counts them; the exposed communication is not drawn). The work is bounded for
// any plan: fewer micro-batches when pp × micro-batches × ops per micro-batch passes 8,192
// (`capped`; none at all when one micro-batch is already more), and of more than 32 stages only
// the first 16 and the last 16 are drawn (`drawn`; `ops` holds theirs).
struct DrawnSchedule {
  std::vector<PipelineOp> ops;  // empty when there is nothing to draw (no compute time)
  int shown = 0;                // micro-batches drawn
  int micro_batches = 0;        // in the step
  int stages = 1;               // pp
  std::vector<int> drawn;       // the stages drawn, ascending
  bool capped = false;          // fewer micro-batches than max(2·pp, 8) for the bound on work
  int slow_stage = 0;
  double forward_s = 0, backward_s = 0;
  double end_s = 0;  // the last op's end (of every stage simulated)
};
DrawnSchedule drawn_schedule(const PlanResult& plan);

}  // namespace trainledger
