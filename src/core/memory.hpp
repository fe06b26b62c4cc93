// One GPU's memory ledger per stage and phase: state, activations, logits, temporaries,
// fixed overheads (docs/formulas.md#peak).
#pragma once

#include <vector>

#include "stage_params.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

struct StagePlace {
  int stage = 0;
  int layers = 0;
  bool first = false;
  bool last = false;
};

// What is the same on every stage, computed once per plan.
struct MemoryModel {
  Expr layer_none = Expr::term("none", 0, "B");  // one layer, one micro-batch, no recompute
  Expr layer_mode = Expr::term("none", 0, "B");  // ... under the plan's recompute mode
  double largest_tensor = 0;                     // the largest single tensor of a layer
  std::vector<LineItem> fixed;                   // CUDA context and NCCL buffers (every phase)
  std::vector<LineItem> kernels;                 // cuBLAS workspace (once kernels have run)
};

MemoryModel memory_model(const PlanInput& in);

StageMemory stage_memory(const PlanInput& in, const Derived& d, const MemoryModel& model,
                         const StagePlace& place);
// The full ledger of a stage at one phase.
std::vector<LineItem> stage_phase_items(const PlanInput& in, const Derived& d,
                                        const MemoryModel& model, const StagePlace& place,
                                        Phase phase);

// Activations and logits of a stage (held in the forward and backward phases).
std::vector<LineItem> activation_items(const PlanInput& in, const Derived& d,
                                       const MemoryModel& model, const StagePlace& place);
// The temporaries of a phase as one item (empty when there are none).
std::vector<LineItem> temporary_items(const PlanInput& in, const Derived& d,
                                      const MemoryModel& model, const StagePlace& place,
                                      const std::vector<LineItem>& state, Phase phase);
// Fixed overheads that do not depend on the stage.
void fixed_overheads(const PlanInput& in, MemoryModel& model);
// The fragmentation reserve of a phase's dynamic memory.
LineItem fragmentation_item(const PlanInput& in, double dynamic_bytes);

// The state items a stage keeps in host memory under parallel.offload.
std::vector<LineItem> offloaded_items(const PlanInput& in, const Derived& d,
                                      const StagePlace& place);

// Host memory of one node.
HostMemory host_memory(const PlanInput& in, const Derived& d, const StageMemory& worst,
                       const std::vector<LineItem>& offloaded);

}  // namespace trainledger
