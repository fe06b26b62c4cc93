// One GPU's memory ledger per stage and phase: state, activations, logits, temporaries,
// fixed overheads (docs/formulas.md#peak). Every function is a template over the formula's
// value type (formula.hpp): Expr for the explained ledger, Num for numbers only.
#pragma once

#include <type_traits>
#include <vector>

#include "formula.hpp"
#include "stage_params.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

struct StagePlace {
  int stage = 0;
  int layers = 0;
  bool first = false;
  bool last = false;
};

// What is the same on every stage, computed once per plan.
template <typename V>
struct MemoryModel {
  V layer_none = V::term("none", 0, "B");  // one layer, one micro-batch, no recompute
  V layer_mode = V::term("none", 0, "B");  // ... under the plan's recompute mode
  // A MoE model's dense-MLP layers (the first dense_layers, those between moe_every): they
  // save a dense MLP's tensors, not the routed experts'.
  bool dense_kind = false;
  V dense_none = V::term("none", 0, "B");
  V dense_mode = V::term("none", 0, "B");
  double largest_tensor = 0;  // the largest single tensor of a layer
  Items<V> fixed;             // CUDA context and NCCL buffers (every phase)
  Items<V> kernels;           // cuBLAS workspace (once kernels have run)
};

template <typename V>
MemoryModel<V> memory_model(const PlanInput& in);

// A stage's result in each evaluation.
template <typename V>
using StageOf = std::conditional_t<V::explained, StageMemory, StageNumbers>;

template <typename V>
StageOf<V> stage_memory(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                        const StagePlace& place);
// The full ledger of a stage at one phase.
template <typename V>
Items<V> stage_phase_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                           const StagePlace& place, Phase phase);

// Activations and logits of a stage (held in the forward and backward phases).
template <typename V>
Items<V> activation_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                          const StagePlace& place);
// The temporaries of a phase as one item (empty when there are none).
template <typename V>
Items<V> temporary_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                         const StagePlace& place, const Items<V>& state, Phase phase);
// Fixed overheads that do not depend on the stage.
template <typename V>
void fixed_overheads(const PlanInput& in, MemoryModel<V>& model);
// The fragmentation reserve of a phase's dynamic memory.
template <typename V>
// `rest_bytes`: the phase's other items; the reserve never takes the total past the GPU's
// memory (the allocator frees its cache and retries before it reports OOM).
ItemOf<V> fragmentation_item(const PlanInput& in, double dynamic_bytes, double rest_bytes);

// The layers whose activations Megatron-Core's activation offloading shares out (its one
// stage: the model's layers and multi-token-prediction modules), and k of them offloaded.
inline int offload_stage_layers(const PlanInput& in) {
  return in.model.layers + in.model.mtp_layers;
}

// The state items a stage keeps in host memory under parallel.offload.
template <typename V>
Items<V> offloaded_items(const PlanInput& in, const Derived& d, const StagePlace& place);

// Host memory of one node: the items and their sum.
template <typename V>
struct HostOf {
  Items<V> items;
  double peak_bytes = 0;
};
template <typename V>
HostOf<V> host_memory(const PlanInput& in, const Derived& d, const Items<V>& worst_items,
                      const Items<V>& offloaded);

// phase_ledger for the stages of one plan, with what they share (the layout, the derived
// sizes, the memory model) worked out once: the invariant checker reads every stage's phases.
class PhaseLedgers {
 public:
  explicit PhaseLedgers(const PlanInput& input);
  std::vector<LineItem> operator()(int stage, Phase phase) const;

 private:
  const PlanInput& m_input;
  Derived m_derived;
  std::vector<int> m_layers;
  MemoryModel<Expr> m_model;
};

}  // namespace trainledger
