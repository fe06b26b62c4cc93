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

StageMemory stage_memory(const PlanInput& in, const Derived& d, const StagePlace& place);

// Dynamic items (activations, logits) of a stage at `phase`.
std::vector<LineItem> activation_items(const PlanInput& in, const Derived& d,
                                       const StagePlace& place, Phase phase);
// The temporaries of a phase as one item (empty when there are none).
std::vector<LineItem> temporary_items(const PlanInput& in, const Derived& d,
                                      const StagePlace& place, const StageParams& sp,
                                      const std::vector<LineItem>& state, Phase phase);
// CUDA context, NCCL buffers, cuBLAS workspace and the allocator's fragmentation reserve.
std::vector<LineItem> overhead_items(const PlanInput& in, const Derived& d, Phase phase,
                                     double dynamic_bytes);

// The state items a stage keeps in host memory under parallel.offload.
std::vector<LineItem> offloaded_items(const PlanInput& in, const Derived& d,
                                      const StagePlace& place);

// Host memory of one node.
HostMemory host_memory(const PlanInput& in, const Derived& d, const StageMemory& worst,
                       const std::vector<LineItem>& offloaded);

}  // namespace trainledger
