// Element-wise HBM traffic of one transformer layer, op by op (docs/formulas.md#compute):
// what the kernels between the matmuls read and write in forward and backward. Eager PyTorch
// runs each op of a chain as its own kernel, which reads its inputs from HBM and writes its
// output back; a fused kernel (Megatron-LM with Transformer Engine, torch.compile) reads the
// chain's inputs and writes its outputs once.
#include <algorithm>

#include "activations.hpp"

namespace trainledger {

namespace {

// Bytes per element read and written by one op, forward and backward.
struct OpBytes {
  double forward = 0;
  double backward = 0;
};

class Ledger {
 public:
  explicit Ledger(const PlanInput& in) : m_in(in) {}
  // `elements` per micro-batch before any split; `split` as for saved tensors.
  void add(double elements, Split split, OpBytes bytes, bool kv = false) {
    SavedTensor t;
    t.elements = elements;
    t.bytes = 1;
    t.split = split;
    t.kv = kv;
    const double local = tensor_bytes(m_in, t);
    m_traffic.forward += local * bytes.forward;
    m_traffic.backward += local * bytes.backward;
  }
  Traffic traffic() const { return m_traffic; }

 private:
  const PlanInput& m_in;
  Traffic m_traffic;
};

// A norm over `elements` values of width h.
OpBytes norm_bytes(const PlanInput& in, double e) {
  const TrainingSpec& t = in.training;
  if (t.fused_elementwise) return {2 * e, 3 * e};  // read x, write y; read dy and x, write dx
  if (in.model.norm != NormKind::rmsnorm) {
    // PyTorch's native layer_norm kernel is one kernel each way. Under autocast (Hugging Face
    // Trainer's fp16/bf16) it runs in fp32: the input is cast up (read e, write 4) and the
    // fp32 output cast down by the next matmul (read 4, write e).
    if (autocast(in)) return {2 * (e + 4) + 8, 3 * 4.0 + 2 * (e + 4)};
    return {2 * e, 3 * e};
  }
  // RMSNorm written in PyTorch (torch.nn.functional.rms_norm's composite, Hugging Face's
  // LlamaRMSNorm, torchtitan's and LitGPT's): x.float(), pow(2), mean, rsqrt, x * rsqrt,
  // .type_as(x), * weight, each a kernel, in fp32 when the input is 16-bit. Backward runs the
  // same chain's derivatives (both products, the pow, the reduction's broadcast, the two
  // paths' gradient sum and the casts).
  const double up = e < 4 ? e + 4 : 0;  // a 16-bit input's cast to fp32 and back
  return {up + 8 + 4 + 8 + up + 2 * e, 3 * e + up + 16 + 12 + 12 + up};
}

}  // namespace

bool autocast(const PlanInput& in) {
  const TrainingSpec& t = in.training;
  return t.framework == Framework::hf &&
         (t.precision == DType::fp16 || t.precision == DType::bf16) && t.master_weights;
}

bool rotary(const ModelSpec& m) { return m.position_embeddings == 0 && !m.embedding_norm; }

Traffic layer_traffic(const PlanInput& in) {
  Ledger l(in);
  const ModelSpec& m = in.model;
  if (m.count_only) return {};
  const TrainingSpec& t = in.training;
  const bool fused = t.fused_elementwise;
  const double e = t.precision == DType::fp32 ? 4 : 2;  // activation bytes per element
  const double T = local_tokens(in);
  const double h = m.hidden;
  const double d = head_dim(m);
  const double q = m.heads * d;
  const double kv = m.kv_heads * d;
  const bool dropout = t.dropout > 0;

  // Norms on the residual stream.
  for (int i = 0; i < m.norms_per_layer; ++i) l.add(T * h, Split::seq, norm_bytes(in, e));
  // Two residual adds (read two, write one; their gradients are summed the same way). A
  // fused bias-dropout-add (Megatron-LM) also writes and reads the dropout mask.
  const double mask = dropout ? 1 : 0;
  const OpBytes add = fused ? OpBytes{3 * e + mask, 3 * e + mask} : OpBytes{3 * e, 3 * e};
  l.add(2 * T * h, Split::seq, add);
  // Dropout on the attention and MLP outputs as separate kernels in eager PyTorch.
  if (dropout && !fused) l.add(2 * T * h, Split::seq, {2 * e + 1, 2 * e + 1});

  // Rotary embeddings on q and k: x·cos + rotate_half(x)·sin is five kernels eager (HF),
  // torchtitan's complex product three with fp32 copies; one fused kernel otherwise.
  if (rotary(m)) {
    const OpBytes rope = fused ? OpBytes{2 * e, 2 * e} : OpBytes{10 * e, 12 * e};
    l.add(T * q, Split::tp, rope);
    l.add(T * kv, Split::tp, rope, true);
  }
  if (t.attention == Attention::eager) {
    // The s² scores: scale, mask, softmax (fp32 under autocast), dropout, each a kernel; a
    // fused scaled-masked softmax (Megatron-LM) reads and writes them once.
    const double seq_local = static_cast<double>(t.seq_len) / std::max(1, in.parallel.cp);
    const double scores = m.heads * static_cast<double>(t.micro_batch) * seq_local * t.seq_len;
    if (fused) {
      l.add(scores, Split::tp, {2 * e + mask, 3 * e + mask});
    } else {
      const double soft = autocast(in) ? e + 4 : 2 * e;
      l.add(scores, Split::tp,
            {2 * e + 2 * e + soft + (dropout ? 2 * e + 1 : 0),
             2 * e + 2 * e + (autocast(in) ? 12 : 3 * e) + (dropout ? 2 * e + 1 : 0)});
    }
  } else if (!fused) {
    // The attention output's transpose back to (tokens, heads × d) is a copy.
    l.add(T * q, Split::tp, {2 * e, 2 * e});
  }

  // The MLP's activation on `tokens` of width f.
  auto activation = [&](double tokens, double f) {
    if (is_gated(m.ffn_act)) {
      // act(gate) · up: two kernels eager (act: read, write; product: read two, write one),
      // one fused (read gate and up, write the product). Backward: the product's two input
      // gradients and the activation's derivative.
      l.add(tokens * f, Split::tp, fused ? OpBytes{3 * e, 5 * e} : OpBytes{5 * e, 8 * e});
    } else {
      l.add(tokens * f, Split::tp, {2 * e, 3 * e});
    }
  };
  if (is_moe(m)) {
    const double routed = T * m.experts_per_token * moe_load(in);
    // Router softmax and top-k in fp32, the tokens' permutation to their experts and back.
    l.add(T * m.experts, Split::seq, {8, 12});
    l.add(2 * routed * h, Split::seq, {2 * e, 2 * e});
    activation(routed, m.expert_ffn);
    if (m.shared_experts > 0) activation(T, static_cast<double>(shared_ffn(m)) * m.shared_experts);
  } else {
    activation(T, m.ffn);
  }
  return l.traffic();
}

// Kernels per layer, op by op as layer_traffic above (docs/formulas.md#dispatch). A GEMM is one
// kernel forward and two backward (input and weight gradients; one for a frozen weight).
// Eager PyTorch runs every op of a chain as its own kernel; Transformer Engine and
// torch.compile one kernel per fused chain, with q, k and v in one GEMM under Transformer
// Engine (te.LayerNormLinear) and the gate and up projections in one (fc1).
Kernels layer_kernels(const PlanInput& in) {
  const ModelSpec& m = in.model;
  Kernels k;
  if (m.count_only) return k;
  const TrainingSpec& t = in.training;
  const bool fused = t.fused_elementwise;
  const bool te = t.framework == Framework::megatron;
  const bool frozen = t.finetune != Finetune::full;
  const double gemm_bwd = frozen ? 1.0 : 2.0;
  auto gemms = [&](double n) {
    k.forward += n;
    k.backward += gemm_bwd * n;
  };
  auto ops = [&](double fwd, double bwd) {
    k.forward += fwd;
    k.backward += bwd;
  };
  const bool dropout = t.dropout > 0;
  // Norms: RMSNorm written in PyTorch is x.float(), pow, mean, + eps, rsqrt, mul, type_as,
  // * weight (eight kernels; ten in backward); PyTorch's native layer_norm one each way (and
  // autocast's casts); fused one each way.
  double norm_f = 1, norm_b = 1;
  if (!fused) {
    if (m.norm == NormKind::rmsnorm) {
      norm_f = 8;
      norm_b = 10;
    } else if (autocast(in)) {
      norm_f = 3;
      norm_b = 3;
    } else {
      norm_b = 2;
    }
  }
  if (m.norm != NormKind::none) ops(m.norms_per_layer * norm_f, m.norms_per_layer * norm_b);
  if (m.qk_norm != QkNorm::none) ops(2 * norm_f, 2 * norm_b);
  // Two residual adds (a fused bias-dropout-add each under Transformer Engine), their
  // gradients summed where the stream forks; dropout as its own kernel in eager PyTorch.
  ops(2, 2);
  if (dropout && !fused) ops(2, 2);
  // Attention's projections.
  if (is_mla(m)) {
    gemms(m.q_lora_rank > 0 ? 5 : 4);
    if (!fused)
      ops(m.q_lora_rank > 0 ? 2 * norm_f : norm_f, m.q_lora_rank > 0 ? 2 * norm_b : norm_b);
  } else {
    gemms(te ? 2 : 4);  // q, k, v, o (qkv and o)
  }
  // Rotary embeddings on q and k: x·cos + rotate_half(x)·sin, five kernels each eager.
  if (rotary(m)) ops(fused ? 2 : 10, fused ? 2 : 10);
  if (t.attention == Attention::eager) {
    // Q·Kᵀ, scale, mask, softmax (dropout), P·V; fused: the two batched GEMMs and one
    // scaled-masked softmax.
    ops(fused ? 3 : 5 + (dropout ? 1 : 0), fused ? 5 : 6 + (dropout ? 1 : 0));
  } else {
    // FlashAttention's forward kernel; its backward's pre-processing, main and dq-conversion
    // kernels; eager PyTorch copies the output back to (tokens, heads × d).
    ops(1, 3);
    if (!fused) ops(1, 1);
  }
  // The MLP.
  const bool gated = is_gated(m.ffn_act);
  auto mlp = [&](double count) {
    gemms(count * (gated ? (te ? 2 : 3) : 2));
    if (gated && !fused)
      ops(2 * count, 3 * count);  // act(gate), · up
    else
      ops(count, count);
  };
  if (is_moe(m)) {
    // Router GEMM, softmax and top-k; the tokens' permutation to the experts and back. Eager
    // model code (Hugging Face's Mixtral, Qwen-MoE) loops over the rank's experts, selecting
    // and scattering each one's tokens; Megatron-Core's grouped GEMM runs them as one.
    gemms(1);
    ops(3, 3);
    const double local = std::max(1.0, static_cast<double>(m.experts) / in.parallel.ep);
    if (te || t.compile) {
      ops(4, 4);
      mlp(1);
    } else {
      ops(3 * local, 3 * local);
      mlp(local);
    }
    if (m.shared_experts > 0) mlp(1);
  } else {
    mlp(1);
  }
  return k;
}

double layer_param_tensors(const PlanInput& in) {
  const ModelSpec& m = in.model;
  if (m.count_only) return 0;
  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  double n = is_mla(m) ? (m.q_lora_rank > 0 ? 5.0 : 4.0) + 2.0 : 4.0;
  if (m.bias == BiasKind::qkv) n += 3;
  if (m.bias == BiasKind::mlp) n += mats;
  if (m.bias == BiasKind::all) n += 4 + mats;
  if (m.norm != NormKind::none)
    n += m.norms_per_layer * (m.norm == NormKind::layernorm ? 2.0 : 1.0);
  if (m.qk_norm != QkNorm::none) n += 2;
  if (is_moe(m)) {
    const double local = std::max(1.0, static_cast<double>(m.experts) / in.parallel.ep);
    n += 1 + mats * local + (m.shared_experts > 0 ? mats : 0.0);
  } else {
    n += mats;
  }
  return n;
}

}  // namespace trainledger
