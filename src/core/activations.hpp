// Activations saved for backward, tensor by tensor (docs/formulas.md#activations).
#pragma once

#include <array>
#include <cstdint>

#include "trainledger/expr.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

// How a saved tensor is split across the tensor-parallel group.
enum class Split {
  tp,   // inside the TP region (heads, MLP width): always divided by t
  seq,  // outside it (norm inputs, residual-side masks): divided by t with sequence parallelism
};

// A set of LoRA targets, one bit per LoraTarget.
using TargetSet = std::uint8_t;
constexpr TargetSet target_bit(LoraTarget t) {
  return static_cast<TargetSet>(1u << static_cast<int>(t));
}

struct SavedTensor {
  Text name = "";       // up to three pieces of static text ("lora_", "q_proj", "_a_out")
  double elements = 0;  // per micro-batch, per layer, before any split
  double bytes = 2;     // per element
  Split split = Split::seq;
  bool core_attention = false;  // recomputed by selective recompute (Korthikanti et al. §5)
  // The recompute modules (RecomputeModule bits) whose recomputation drops it, and whether the
  // plan's selective recompute does (layer_tensors sets it from training.recompute_modules).
  std::uint8_t modules = 0;
  bool selective = false;
  bool op_saved = false;  // kept by the op policy (torchtitan's selective "op" AC)
  bool op_only = false;   // exists only as a saved op output (not saved otherwise)
  // Read by the backward. Eager selective AC caches every output its policy saves; under
  // torch.compile the partitioner saves only what the backward reads
  // (docs/formulas.md#activations).
  bool backward_reads = true;
  bool layer_input = false;  // kept by full recompute (the checkpoint's input)
  bool kv = false;           // K or V: one replicated head per rank when tp > kv_heads
  bool routed = false;       // MoE routed tokens: × the routing load (docs/formulas.md#moe-load)
  // Matmul inputs kept only for a weight gradient: with LoRA the frozen base does not need
  // them, unless an adapter on that matmul reads the same tensor (lora_dropout = 0).
  TargetSet weight_input_of = 0;
};

// The saved tensors of a layer (or of a stage's edges), in a fixed-size list.
class Tensors {
 public:
  void push_back(const SavedTensor& t) {
    if (m_size < k_capacity) m_items[m_size++] = t;
  }
  const SavedTensor* begin() const { return m_items.data(); }
  const SavedTensor* end() const { return m_items.data() + m_size; }
  SavedTensor* begin() { return m_items.data(); }
  bool empty() const { return m_size == 0; }
  int size() const { return m_size; }
  void resize_down(int n) { m_size = n < m_size ? n : m_size; }

 private:
  // Attention and MLP keep about 30 tensors at most; seven LoRA targets add three each.
  static constexpr int k_capacity = 64;
  std::array<SavedTensor, k_capacity> m_items{};
  int m_size = 0;
};

// Saved tensors of one transformer layer for one micro-batch of the plan; for a MoE model
// `moe_layer = false` gives one of its dense-MLP layers (an MLP of width model.ffn).
Tensors layer_tensors(const PlanInput& in, bool moe_layer = true);
// Tensors outside the layers: first stage (embedding side) or last stage (final norm, head).
Tensors first_stage_tensors(const PlanInput& in);
Tensors last_stage_tensors(const PlanInput& in);

// Bytes of one tensor on one GPU.
double tensor_bytes(const PlanInput& in, const SavedTensor& t);

// Bytes one layer keeps for one micro-batch under `mode`.
double layer_bytes(const PlanInput& in, Recompute mode);
double layer_bytes(const PlanInput& in, const Tensors& layer, Recompute mode);
// Bytes of the tensors a layer saves without recompute that `mode` drops: what its
// recomputed forward produces again (a tensor only `mode` keeps is not among them).
double recomputed_bytes(const PlanInput& in, const Tensors& layer, Recompute mode);
// The same as a formula whose terms are the kept tensors (V = Expr or Num).
template <typename V>
V layer_bytes_expr(const PlanInput& in, Recompute mode);
// ... from the layer's tensors (layer_tensors) when the caller holds them.
template <typename V>
V layer_bytes_expr(const PlanInput& in, const Tensors& layer, Recompute mode);
template <typename V>
V tensors_expr(const PlanInput& in, const Tensors& tensors);

// Tokens one GPU processes per micro-batch (s / cp × b).
double local_tokens(const PlanInput& in);
// MoE: the routed tokens one rank's experts take, over the balanced mean: the capacity factor,
// or dropless, training.moe_imbalance (1 for a dense model).
double moe_load(const PlanInput& in);
// Megatron-Core's MoE layer under sequence parallelism (transformer/moe/moe_layer.py): the
// router runs on the rank's sequence shard and the token dispatcher moves the tokens itself,
// over ep and then the expert-tensor-parallel group; the layer has no tensor-parallel gather of
// the hidden state but for its shared experts.
bool megatron_moe_dispatch(const PlanInput& in);

// Element-wise HBM traffic of one layer for one micro-batch on one GPU, op by op (norms,
// residual adds, dropout, rotary embeddings, eager attention's softmax, the MLP's activation):
// bytes read and written by the kernels between the matmuls (src/core/traffic.cpp).
struct Traffic {
  double forward = 0;
  double backward = 0;
};
Traffic layer_traffic(const PlanInput& in);
// Kernels one layer launches per micro-batch on one GPU, forward and backward, op by op as
// layer_traffic counts their bytes (src/core/traffic.cpp): what the host dispatches.
struct Kernels {
  double forward = 0;
  double backward = 0;
};
Kernels layer_kernels(const PlanInput& in);
// Parameter tensors of one layer on one GPU (the optimizer's per-tensor work).
double layer_param_tensors(const PlanInput& in);
// Hugging Face Trainer's mixed precision: autocast runs softmax and norms in fp32.
bool autocast(const PlanInput& in);
// Rotary position embeddings: no learned table and no ALiBi (BLOOM's, marked by its
// embedding norm).
bool rotary(const ModelSpec& m);

// The largest single intermediate of a layer on one GPU (for the backward working set).
double largest_layer_tensor(const PlanInput& in);
double largest_layer_tensor(const PlanInput& in, const Tensors& layer);

}  // namespace trainledger
