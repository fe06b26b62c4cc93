// What each transformer layer saves for backward (Korthikanti et al. 2022, §4, Table 2),
// derived tensor by tensor so that GQA, SwiGLU, flash attention, no dropout, MoE, TP/SP and CP
// follow from the same list. For the GPT shape (MHA, GELU with f = 4h, eager attention,
// dropout) the list sums to s·b·h·(34 + 5·a·s/h) — tests/unit/test_activations.cpp.
#include "activations.hpp"

#include <algorithm>

#include "formula.hpp"
#include "recipe.hpp"

namespace trainledger {

namespace {

constexpr double k_act = 2;   // 16-bit activations
constexpr double k_mask = 1;  // dropout masks: one byte per element
constexpr double k_fp32 = 4;

double seq_local(const PlanInput& in) {
  return static_cast<double>(in.training.seq_len) / std::max(1, in.parallel.cp);
}

double act_bytes(const PlanInput& in) {
  return in.training.precision == DType::fp32 ? k_fp32 : k_act;
}

// Transformer Engine (Megatron-LM's FP8 recipe) saves for the weight gradient the FP8 cast of
// each GEMM input it produces itself, one byte per element: the norm's output inside
// LayerNormLinear and LayerNormMLP, and the MLP's activation before its second GEMM. te.Linear
// given an outside tensor (the attention output, which flash attention keeps in 16 bits for
// its own backward) saves an FP8 copy besides (Transformer Engine docs, low-precision
// training, performance considerations: "the input ... must be saved between passes").
bool te_fp8(const PlanInput& in) {
  return in.training.precision == DType::fp8 && in.training.framework == Framework::megatron;
}

// The saved copy's bytes follow the recipe (saved_input_bytes: 1 B per-tensor FP8, 1.03 B
// block-scaled FP8, 0.56 B NVFP4). torchao's float8 and MX linears save the 16-bit input and
// quantize again in backward (float8/float8_linear.py matmul_with_hp_or_float8_args:
// ctx.save_for_backward(input_hp, ...)); its NVFP4 linear saves the 4-bit column-wise copy
// (prototype/moe_training/nvfp4_training/nvfp4_linear.py nvfp4_mm_triton).
double gemm_input_bytes(const PlanInput& in) {
  if (te_fp8(in) || in.training.recipe == Recipe::nvfp4) return saved_input_bytes(in);
  return act_bytes(in);
}

SavedTensor tensor(Text name, double elements, double bytes, Split split) {
  SavedTensor t;
  t.name = name;
  t.elements = elements;
  t.bytes = bytes;
  t.split = split;
  return t;
}

// A norm's saved tensors. Fused kernels keep the 16-bit input; eager PyTorch code (Hugging
// Face's LlamaRMSNorm) keeps an fp32 copy of it, and the 16-bit normalized output when the
// norm's weight trains.
void norm_tensors(const PlanInput& in, std::string_view name, double elements, bool layer_input,
                  Tensors& out) {
  SavedTensor input = tensor(Text(name, "_in"), elements, act_bytes(in), Split::seq);
  input.layer_input = layer_input;
  input.op_saved = layer_input;
  if (!in.training.eager_norm) {
    out.push_back(input);
    return;
  }
  if (layer_input) {
    input.op_only = true;  // the checkpoint keeps the 16-bit layer input
    out.push_back(input);
  }
  out.push_back(tensor(Text(name, "_fp32"), elements, k_fp32, Split::seq));
  if (in.training.finetune == Finetune::full)
    out.push_back(tensor(Text(name, "_normed"), elements, act_bytes(in), Split::seq));
}

// LoRA adapters save their own input (the dropout output and mask when lora_dropout > 0) and
// the rank-r output of A, the input of B (Hu et al. 2021; PEFT's LoraLayer).
void lora_tensors(const PlanInput& in, Tensors& out) {
  const TrainingSpec& t = in.training;
  if (t.finetune == Finetune::full) return;
  const ModelSpec& m = in.model;
  const double T = local_tokens(in);
  const double h = m.hidden;
  const double q = m.heads * static_cast<double>(head_dim(m));
  for (LoraTarget target : t.lora_targets) {
    const std::string_view name = to_string(target);
    double d_in = h;
    Split split = Split::seq;
    if (target == LoraTarget::o) d_in = q, split = Split::tp;
    if (target == LoraTarget::down) d_in = m.ffn, split = Split::tp;
    if (t.lora_dropout > 0) {
      out.push_back(tensor(Text("lora_", name, "_dropout_out"), T * d_in, act_bytes(in), split));
      out.push_back(tensor(Text("lora_", name, "_dropout_mask"), T * d_in, k_mask, split));
    }
    out.push_back(
        tensor(Text("lora_", name, "_a_out"), T * t.lora_rank, act_bytes(in), Split::seq));
  }
}

void attention_tensors(const PlanInput& in, Tensors& out) {
  const ModelSpec& m = in.model;
  const double T = local_tokens(in);
  const double a = m.heads;
  const double d = head_dim(m);
  const double h = m.hidden;
  const double kv = m.kv_heads;
  const double ab = act_bytes(in);
  const bool dropout = in.training.dropout > 0;

  norm_tensors(in, "attn_norm", T * h, true, out);
  SavedTensor qkv_in = tensor("qkv_in", T * h, gemm_input_bytes(in), Split::seq);
  qkv_in.weight_input_of =
      target_bit(LoraTarget::q) | target_bit(LoraTarget::k) | target_bit(LoraTarget::v);
  out.push_back(qkv_in);
  SavedTensor q = tensor("q", T * a * d, ab, Split::tp);
  q.op_saved = true;
  out.push_back(q);
  SavedTensor k = tensor("k", T * kv * d, ab, Split::tp);
  k.kv = true;
  out.push_back(k);
  SavedTensor v = tensor("v", T * kv * v_head_dim(m), ab, Split::tp);
  v.op_saved = true;
  v.kv = true;
  out.push_back(v);
  if (is_mla(m)) {
    // MLA: the latents are computed whole on every TP rank and normed before their
    // up-projections, which save them as inputs (modeling_deepseek.py).
    const double latents = static_cast<double>(m.q_lora_rank) + m.kv_lora_rank;
    out.push_back(tensor("mla_latent", T * (latents + m.qk_rope_head_dim), ab, Split::seq));
    out.push_back(tensor("mla_latent_normed", T * latents, gemm_input_bytes(in), Split::seq));
  }
  if (in.training.attention == Attention::eager) {
    // Scores attend over the whole sequence; with CP each rank holds its queries' rows.
    const double scores = a * in.training.micro_batch * seq_local(in) * in.training.seq_len;
    // Under autocast (Hugging Face Trainer's fp16/bf16) softmax runs in fp32 and saves its fp32
    // output (PyTorch autocast op reference: softmax autocasts to float32).
    SavedTensor softmax = tensor("softmax_out", scores, autocast(in) ? k_fp32 : ab, Split::tp);
    softmax.core_attention = true;
    out.push_back(softmax);
    if (dropout) {
      SavedTensor mask = tensor("softmax_dropout_mask", scores, k_mask, Split::tp);
      mask.core_attention = true;
      out.push_back(mask);
      SavedTensor drop = tensor("softmax_dropout_out", scores, ab, Split::tp);
      drop.core_attention = true;
      out.push_back(drop);
    }
  } else {
    // Flash attention keeps no s² tensor, only a per-row log-sum-exp (fp32).
    SavedTensor lse = tensor("logsumexp", T * a, k_fp32, Split::tp);
    lse.op_saved = in.training.op_saves_attention;
    out.push_back(lse);
  }
  SavedTensor ctx = tensor("attn_out", T * a * v_head_dim(m), ab, Split::tp);
  // The op policy keeps the attention kernel's outputs when its save list names the kernel.
  ctx.op_saved = in.training.attention == Attention::eager || in.training.op_saves_attention;
  // Eager attention's context is only the o projection's input; flash keeps it as its output.
  if (in.training.attention == Attention::eager) ctx.weight_input_of = target_bit(LoraTarget::o);
  out.push_back(ctx);
  if (te_fp8(in)) {
    SavedTensor ctx8 =
        tensor("attn_out_fp8", T * a * v_head_dim(m), saved_input_bytes(in), Split::tp);
    ctx8.op_saved = true;
    out.push_back(ctx8);
  }
  if (dropout) out.push_back(tensor("attn_dropout_mask", T * h, k_mask, Split::seq));
}

// MLP on `tokens` tokens of width f: what autograd keeps (PyTorch eager for gated MLPs).
// `act_modules`: the recompute modules that drop the activation function's outputs.
void mlp_core(const PlanInput& in, double tokens, double f, std::string_view prefix, Tensors& out,
              std::uint8_t act_modules = 0) {
  const double ab = act_bytes(in);
  if (is_gated(in.model.ffn_act)) {
    SavedTensor gate = tensor(Text(prefix, "gate_out"), tokens * f, ab, Split::tp);
    gate.op_saved = true;  // the first MLP matmul's output
    out.push_back(gate);
    out.push_back(tensor(Text(prefix, "up_out"), tokens * f, ab, Split::tp));
    // PyTorch eager keeps silu(gate) for the product's backward; a fused SwiGLU recomputes it
    // from the saved gate and up outputs (Megatron-LM's bias_swiglu_impl).
    if (!in.training.fused_swiglu) {
      SavedTensor act = tensor(Text(prefix, "act_out"), tokens * f, ab, Split::tp);
      act.modules = act_modules;
      out.push_back(act);
    }
    SavedTensor down_in =
        tensor(Text(prefix, "down_in"), tokens * f, gemm_input_bytes(in), Split::tp);
    down_in.weight_input_of = target_bit(LoraTarget::down);
    down_in.modules = act_modules;
    out.push_back(down_in);
  } else {
    SavedTensor fc1 = tensor(Text(prefix, "fc1_out"), tokens * f, ab, Split::tp);
    fc1.op_saved = true;
    out.push_back(fc1);
    SavedTensor act = tensor(Text(prefix, "act_out"), tokens * f, gemm_input_bytes(in), Split::tp);
    act.weight_input_of = target_bit(LoraTarget::down);  // the second matmul's input
    act.modules = act_modules;
    out.push_back(act);
  }
}

// Tags the tensors from `first` on with recompute modules.
void tag(Tensors& out, int first, RecomputeModule m) {
  SavedTensor* items = out.begin();
  for (int i = first; i < out.size(); ++i) items[i].modules |= static_cast<std::uint8_t>(m);
}

void mlp_tensors(const PlanInput& in, bool moe_layer, Tensors& out) {
  const ModelSpec& m = in.model;
  const double T = local_tokens(in);
  const double h = m.hidden;
  const double ab = act_bytes(in);
  const bool moe = is_moe(m) && moe_layer;
  norm_tensors(in, "mlp_norm", T * h, false, out);
  SavedTensor mlp_in = tensor("mlp_in", T * h, gemm_input_bytes(in), Split::seq);
  mlp_in.weight_input_of = target_bit(LoraTarget::gate) | target_bit(LoraTarget::up);
  // A MoE layer's pre-MLP norm is its own module in Megatron-Core (TENorm, not fused into a
  // LayerNormMLP): --recompute-modules layernorm drops its output, the MoE block's input
  // (transformer_layer.py, recompute_pre_mlp_layernorm).
  if (moe) mlp_in.modules = static_cast<std::uint8_t>(RecomputeModule::layernorm);
  out.push_back(mlp_in);
  if (moe) {
    // The routed tensors at the balanced T·k; tensor_bytes scales them by the routing load.
    const double routed = T * m.experts_per_token;
    const int first_moe = out.size();
    out.push_back(tensor("router_probs", T * m.experts, k_fp32, Split::seq));
    const int first_routed = out.size();
    // Megatron-Core's alltoall dispatcher gathers the routed tokens over the expert-tensor-
    // parallel group after the all-to-all (token_dispatcher.py dispatch_postprocess,
    // gather_from_sequence_parallel_region), and the experts' first GEMM keeps that gathered
    // input: etp times the rank's own sequence-parallel share. The outputs are reduce-scattered
    // before the combine, which keeps the rank's share.
    const double gathered = megatron_moe_dispatch(in) ? expert_tp(in.parallel) : 1;
    out.push_back(tensor("expert_in", routed * h * gathered, ab, Split::seq));
    // The activation's output (the second GEMM's input, and eager SwiGLU's product):
    // --recompute-modules moe_act recomputes it from the first GEMM's output.
    mlp_core(in, routed, m.expert_ffn, "expert_", out,
             static_cast<std::uint8_t>(RecomputeModule::moe_act));
    out.push_back(tensor("expert_out", routed * h, ab, Split::seq));
    SavedTensor* items = out.begin();
    for (int i = first_routed; i < out.size(); ++i) items[i].routed = true;
    if (m.shared_experts > 0) {
      const int first_shared = out.size();
      mlp_core(in, T, static_cast<double>(shared_ffn(m)) * m.shared_experts, "shared_", out);
      tag(out, first_shared, RecomputeModule::shared_experts);
    }
    // --recompute-modules moe checkpoints the whole MoE layer from its input.
    tag(out, first_moe, RecomputeModule::moe);
  } else {
    const int first_mlp = out.size();
    mlp_core(in, T, m.ffn, "", out);
    tag(out, first_mlp, RecomputeModule::mlp);
  }
  if (is_gated(m.ffn_act)) {
    // The op policy saves every other matmul output: q, v, the MLP's first and last matmul.
    SavedTensor mlp_out = tensor("mlp_out", T * h, ab, Split::seq);
    mlp_out.op_saved = true;
    mlp_out.op_only = true;
    mlp_out.backward_reads = false;  // it feeds the residual add, whose backward reads nothing
    out.push_back(mlp_out);
  }
  if (in.training.dropout > 0) out.push_back(tensor("mlp_dropout_mask", T * h, k_mask, Split::seq));
}

// With LoRA the frozen matmuls keep no input for a weight gradient (autograd saves only what
// the backward needs); an adapter without dropout reads the same tensor, which then stays.
// QLoRA's 4-bit matmuls keep theirs: bitsandbytes' MatMul4Bit saves its input whenever the
// input needs a gradient.
void drop_frozen_inputs(const PlanInput& in, Tensors& tensors) {
  const TrainingSpec& t = in.training;
  if (t.finetune != Finetune::lora) return;
  TargetSet adapted = 0;
  if (t.lora_dropout == 0)
    for (LoraTarget target : t.lora_targets) adapted |= target_bit(target);
  int kept_count = 0;
  SavedTensor* items = tensors.begin();
  for (int i = 0; i < tensors.size(); ++i) {
    const SavedTensor& s = items[i];
    if (s.weight_input_of == 0 || (s.weight_input_of & adapted) != 0) items[kept_count++] = s;
  }
  tensors.resize_down(kept_count);
}

// Under torch.compile the op policy's tags (torch/utils/checkpoint.py
// _CachingTorchDispatchMode: node.meta["recompute"]) only steer the min-cut partitioner
// (torch/_functorch/partitioners.py: MUST_SAVE bans a node's recomputation), which saves the
// forward values the backward graph reads and nothing else; eager selective AC stores every
// MUST_SAVE output in its cache whether or not the backward reads it.
bool kept(const SavedTensor& t, Recompute mode, bool compiled) {
  switch (mode) {
    case Recompute::none:
      return !t.op_only;
    case Recompute::selective:
      return !t.op_only && !t.selective;
    case Recompute::op:
      return t.op_saved && (t.backward_reads || !compiled);
    case Recompute::full:
      return t.layer_input;
  }
  return true;
}

}  // namespace

double moe_load(const PlanInput& in) {
  if (!is_moe(in.model)) return 1;
  const TrainingSpec& t = in.training;
  return t.moe_capacity_factor > 0 ? t.moe_capacity_factor : t.moe_imbalance;
}

bool megatron_moe_dispatch(const PlanInput& in) {
  return in.training.framework == Framework::megatron && is_moe(in.model) &&
         in.parallel.sequence_parallel && in.parallel.tp > 1;
}

double local_tokens(const PlanInput& in) {
  return seq_local(in) * static_cast<double>(in.training.micro_batch);
}

Tensors layer_tensors(const PlanInput& in, bool moe_layer) {
  Tensors out;
  if (in.model.count_only) return out;
  attention_tensors(in, out);
  mlp_tensors(in, moe_layer, out);
  lora_tensors(in, out);
  drop_frozen_inputs(in, out);
  // What selective recompute drops: the tensors of the modules it runs again.
  SavedTensor* items = out.begin();
  for (int i = 0; i < out.size(); ++i) {
    if (items[i].core_attention)
      items[i].modules |= static_cast<std::uint8_t>(RecomputeModule::core_attn);
    items[i].selective = (items[i].modules & in.training.recompute_modules) != 0;
  }
  return out;
}

Tensors first_stage_tensors(const PlanInput& in) {
  Tensors out;
  if (in.model.count_only) return out;
  const double T = local_tokens(in);
  const double h = in.model.hidden;
  if (in.model.embedding_norm)
    out.push_back(tensor("embedding_norm_in", T * h, act_bytes(in), Split::seq));
  if (in.training.dropout > 0)
    out.push_back(tensor("embedding_dropout_mask", T * h, k_mask, Split::seq));
  return out;
}

Tensors last_stage_tensors(const PlanInput& in) {
  Tensors out;
  if (in.model.count_only) return out;
  const double T = local_tokens(in);
  const double h = in.model.hidden;
  norm_tensors(in, "final_norm", T * h, false, out);
  SavedTensor head_in = tensor("head_in", T * h, act_bytes(in), Split::seq);
  // The LM head's input is needed for its weight gradient only (frozen under LoRA).
  if (in.training.finetune == Finetune::full) out.push_back(head_in);
  return out;
}

double tensor_bytes(const PlanInput& in, const SavedTensor& t) {
  const int tp = in.parallel.tp;
  double divisor = 1;
  if (t.split == Split::tp) divisor = tp;
  if (t.split == Split::seq && in.parallel.sequence_parallel) divisor = tp;
  double elements = t.elements;
  // K and V: with tp above kv_heads each rank keeps one replicated head.
  if (t.kv && in.model.kv_heads < tp && t.split == Split::tp)
    elements = elements / in.model.kv_heads * tp;
  return elements * t.bytes / divisor * (t.routed ? moe_load(in) : 1.0);
}

double layer_bytes(const PlanInput& in, const Tensors& layer, Recompute mode) {
  double sum = 0;
  for (const SavedTensor& t : layer)
    if (kept(t, mode, in.training.compile)) sum += tensor_bytes(in, t);
  return sum;
}

double recomputed_bytes(const PlanInput& in, const Tensors& layer, Recompute mode) {
  double sum = 0;
  for (const SavedTensor& t : layer)
    if (kept(t, Recompute::none, false) && !kept(t, mode, in.training.compile))
      sum += tensor_bytes(in, t);
  return sum;
}

double layer_bytes(const PlanInput& in, Recompute mode) {
  return layer_bytes(in, layer_tensors(in), mode);
}

template <typename V>
V tensors_expr(const PlanInput& in, const Tensors& tensors) {
  // The routed expert tensors at the balanced T·k, summed, then × the routing load.
  V e = V::term("none", 0, "B");
  V routed = e;
  bool any = false, any_routed = false;
  for (const SavedTensor& t : tensors) {
    SavedTensor balanced = t;
    balanced.routed = false;
    V term = V::term(t.name, tensor_bytes(in, balanced), t.name.prefixed("B "));
    V& sum = t.routed ? routed : e;
    bool& started = t.routed ? any_routed : any;
    sum = started ? sum + term : term;
    started = true;
  }
  if (any_routed) {
    const V load = V::term("moe_load", moe_load(in), "× the mean: MoE routing load");
    e = any ? e + routed * load : routed * load;
  }
  return e;
}

template <typename V>
V layer_bytes_expr(const PlanInput& in, const Tensors& layer, Recompute mode) {
  Tensors kept_tensors;
  for (const SavedTensor& t : layer)
    if (kept(t, mode, in.training.compile)) kept_tensors.push_back(t);
  return tensors_expr<V>(in, kept_tensors);
}

template <typename V>
V layer_bytes_expr(const PlanInput& in, Recompute mode) {
  return layer_bytes_expr<V>(in, layer_tensors(in), mode);
}

template Expr tensors_expr<Expr>(const PlanInput&, const Tensors&);
template Num tensors_expr<Num>(const PlanInput&, const Tensors&);
template Expr layer_bytes_expr<Expr>(const PlanInput&, Recompute);
template Num layer_bytes_expr<Num>(const PlanInput&, Recompute);
template Expr layer_bytes_expr<Expr>(const PlanInput&, const Tensors&, Recompute);
template Num layer_bytes_expr<Num>(const PlanInput&, const Tensors&, Recompute);

double largest_layer_tensor(const PlanInput& in, const Tensors& layer) {
  double largest = 0;
  for (const SavedTensor& t : layer) largest = std::max(largest, tensor_bytes(in, t));
  return largest;
}

double largest_layer_tensor(const PlanInput& in) {
  return largest_layer_tensor(in, layer_tensors(in));
}

}  // namespace trainledger
