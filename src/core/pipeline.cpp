// In-flight micro-batches: GPipe runs all forwards first (Huang et al. 2019); 1F1B starts the
// backward of micro-batch j once p − i forwards are in flight on stage i (Narayanan et al.
// 2021, §2.2); the interleaved schedule warms up with 2(p − i − 1) + (v − 1)p chunks
// (Megatron-LM's schedules.py), which gives the first stage L·(1 + (p − 1)/(p·v)) layers'
// worth (Korthikanti et al. 2022, §4.2.3); ZB-H1 keeps 1F1B's peak (Qi et al. 2023, §3.1).
#include "pipeline.hpp"

#include <algorithm>

#include "formula.hpp"

namespace trainledger {

template <typename V>
V layers_in_flight(const PlanInput& in, int stage, double micro_batches) {
  const ParallelSpec& p = in.parallel;
  const V m = V::term("micro_batches", micro_batches, "micro-batches");
  if (p.pp == 1) return V::term("in_flight", 1, "micro-batch in flight");
  switch (p.schedule) {
    case Schedule::gpipe:
      return m.note("GPipe: every micro-batch in flight");
    case Schedule::one_f_one_b:
    case Schedule::zb_h1: {
      const V ahead = V::term("stages_from_here", p.pp - stage, "stages from here (p − i)");
      return V::min(ahead, m);
    }
    case Schedule::dualpipev:
      // DualPipeV (deepseek-ai/DualPipe README; PyTorch's ScheduleDualPipeV): each device
      // holds two half-stage chunks in a V and keeps 2p + 1 chunks' activations at its peak,
      // the V balancing them over the devices: (2p + 1)/2 of a stage's micro-batch.
      return V::min(V::term("dualpipev_chunks", p.pp + 0.5,
                            "(2p + 1)/2: DualPipeV's 2p + 1 half-stage chunks"),
                    m);
    case Schedule::interleaved: {
      const double v = p.virtual_stages;
      const double warmup = 2.0 * (p.pp - stage - 1) + (v - 1) * p.pp + 1;
      const V chunks =
          V::min(V::term("warmup_chunks", warmup, "chunks (2(p − i − 1) + (v − 1)p + 1)"),
                 m * V::term("virtual_stages", v, "chunks per micro-batch"));
      return chunks / V::term("virtual_stages", v, "chunks per micro-batch");
    }
  }
  return V::term("in_flight", 1, "micro-batch in flight");
}

template <typename V>
V loss_in_flight(const PlanInput& in, double micro_batches) {
  if (in.parallel.pp > 1 && in.parallel.schedule == Schedule::gpipe)
    return V::term("micro_batches", micro_batches, "micro-batches (GPipe)");
  return V::term("in_flight", 1, "micro-batch at the loss");
}

template Expr layers_in_flight<Expr>(const PlanInput&, int, double);
template Num layers_in_flight<Num>(const PlanInput&, int, double);
template Expr loss_in_flight<Expr>(const PlanInput&, double);
template Num loss_in_flight<Num>(const PlanInput&, double);

}  // namespace trainledger
