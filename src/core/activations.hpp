// Activations saved for backward, tensor by tensor (docs/formulas.md#activations).
#pragma once

#include <string>
#include <vector>

#include "trainledger/expr.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

// How a saved tensor is split across the tensor-parallel group.
enum class Split {
  tp,   // inside the TP region (heads, MLP width): always divided by t
  seq,  // outside it (norm inputs, residual-side masks): divided by t with sequence parallelism
};

struct SavedTensor {
  std::string name;
  double elements = 0;  // per micro-batch, per layer, before any split
  double bytes = 2;     // per element
  Split split = Split::seq;
  bool core_attention = false;  // recomputed by selective recompute (Korthikanti et al. §5)
  bool op_saved = false;        // kept by the op policy (torchtitan's selective "op" AC)
  bool op_only = false;         // exists only as a saved op output (not saved otherwise)
  bool layer_input = false;     // kept by full recompute (the checkpoint's input)
  // Matmul inputs kept only for a weight gradient: with LoRA the frozen base does not need
  // them, unless an adapter on that matmul reads the same tensor (lora_dropout = 0).
  std::vector<LoraTarget> weight_input_of;
};

// Saved tensors of one transformer layer for one micro-batch of the plan.
std::vector<SavedTensor> layer_tensors(const PlanInput& in);
// Tensors outside the layers: first stage (embedding side) or last stage (final norm, head).
std::vector<SavedTensor> first_stage_tensors(const PlanInput& in);
std::vector<SavedTensor> last_stage_tensors(const PlanInput& in);

// Bytes of one tensor on one GPU.
double tensor_bytes(const PlanInput& in, const SavedTensor& t);

// Bytes one layer keeps for one micro-batch under `mode`.
double layer_bytes(const PlanInput& in, Recompute mode);
// The same as an expression whose terms are the kept tensors.
Expr layer_bytes_expr(const PlanInput& in, Recompute mode);
Expr tensors_expr(const PlanInput& in, const std::vector<SavedTensor>& tensors);

// Tokens one GPU processes per micro-batch (s / cp × b).
double local_tokens(const PlanInput& in);

// The largest single intermediate of a layer on one GPU (for the backward working set).
double largest_layer_tensor(const PlanInput& in);

}  // namespace trainledger
