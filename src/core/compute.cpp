// FLOPs per micro-batch per GPU (docs/formulas.md#compute): 2 FLOPs per multiply-add of every
// matmul, attention's QKᵀ and AV over the whole sequence (no causal discount, the convention
// of Narayanan et al. 2021, §5.1), the LM head on the last stage; backward 2× the forward for
// trainable matmuls (input and weight gradients), 1× for frozen ones.
#include <algorithm>

#include "activations.hpp"
#include "recipe.hpp"
#include "state.hpp"
#include "timing.hpp"

namespace trainledger {

namespace {

struct LayerFlops {
  double matmul = 0;         // forward FLOPs of the layer's matmuls on one GPU
  double attention = 0;      // QKᵀ and AV
  double op_recomputed = 0;  // matmuls the op policy recomputes (k, o, and up or fc2)
  double fp8_casts = 0;      // bytes the FP8 recipe's scaling and casts move, forward + backward
  // HBM bytes the linear layers' GEMMs read and write at the least (operands in, result out):
  // forward, and the two backward GEMMs (input and weight gradients) of trainable layers.
  double gemm_forward_bytes = 0, gemm_backward_bytes = 0;
  double routed_matmul = 0;  // the routed experts' part of matmul (balanced load)
  // Selective recompute's modules (training.recompute_modules): the forward matmul FLOPs each
  // runs again, averaged over the layers as matmul is.
  double moe_matmul = 0;     // a MoE layer whole: router, routed and shared experts
  double shared_matmul = 0;  // the shared experts
  double dense_mlp = 0;      // the dense layers' MLP
};

// A GEMM of an M × K input by a K × N weight reads both operands and writes its M × N result
// once at the least; its backward reads the output gradient and one operand to write the
// other's gradient, twice (input and weight gradients). Operands are 1 B under FP8, results
// 16-bit. Bytes of the forward GEMM and of both backward ones (the frozen layers' backward
// is the input gradient alone).
struct GemmBytes {
  double forward = 0, input_grad = 0, weight_grad = 0;
};
GemmBytes gemm_bytes(double M, double K, double N, double operand) {
  return {operand * (M * K + K * N) + 2 * M * N, operand * (M * N + K * N) + 2 * M * K,
          operand * (M * K + M * N) + 2 * K * N};
}

LayerFlops layer_flops(const PlanInput& in) {
  const ModelSpec& m = in.model;
  LayerFlops f;
  if (m.count_only) return f;
  const double T = local_tokens(in);
  const double t = in.parallel.tp;
  const double h = m.hidden;
  const double d = head_dim(m);
  const double dv = v_head_dim(m);
  const double q = m.heads * d;
  const double kv = m.kv_heads * d;
  // Attention's weights: split by tp, and (MLA) the down-projections every TP rank runs whole.
  double attn = h * q + 2 * h * kv + q * h;
  double attn_whole = 0;
  if (is_mla(m)) {
    const LayerParams lp = layer_params(m, false);
    attn = lp.attn_matrix;
    attn_whole = lp.latent_matrix;
  }
  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  // A MoE model's dense first layers: their MLP FLOPs averaged over all layers.
  const double moe_share = is_moe(m) ? static_cast<double>(moe_layers(m)) / m.layers : 0.0;
  const double shared_width = static_cast<double>(m.shared_experts) * shared_ffn(m);
  const double moe_mlp =
      is_moe(m)
          ? mats * h * (m.expert_ffn * static_cast<double>(m.experts_per_token) + shared_width) +
                h * m.experts
          : 0.0;
  const double mlp = moe_share * moe_mlp + (1 - moe_share) * mats * h * m.ffn;
  f.matmul = 2 * T * ((attn + mlp) / t + attn_whole);
  f.routed_matmul =
      2 * T * moe_share * mats * h * m.expert_ffn * static_cast<double>(m.experts_per_token) / t;
  f.moe_matmul = 2 * T * moe_share * moe_mlp / t;
  f.shared_matmul = 2 * T * moe_share * mats * h * shared_width / t;
  f.dense_mlp = 2 * T * (1 - moe_share) * mats * h * m.ffn / t;
  {
    const double operand = in.training.recipe == Recipe::nvfp4   ? 0.5
                           : in.training.precision == DType::fp8 ? 1.0
                                                                 : 2.0;
    const bool frozen = in.training.finetune != Finetune::full;
    auto add = [&](double M, double K, double N, double count) {
      const GemmBytes g = gemm_bytes(M, K, N, operand);
      f.gemm_forward_bytes += count * g.forward;
      f.gemm_backward_bytes += count * (g.input_grad + (frozen ? 0.0 : g.weight_grad));
    };
    if (is_mla(m)) {
      if (m.q_lora_rank > 0) {
        add(T, h, m.q_lora_rank, 1);
        add(T, m.q_lora_rank, q / t, 1);
      } else {
        add(T, h, q / t, 1);
      }
      add(T, h, m.kv_lora_rank + m.qk_rope_head_dim, 1);
      add(T, m.kv_lora_rank, m.heads * (m.qk_nope_head_dim + dv) / t, 1);
      add(T, m.heads * dv / t, h, 1);
    } else {
      add(T, h, q / t, 1);   // q
      add(T, h, kv / t, 2);  // k, v
      add(T, q / t, h, 1);   // o
    }
    if (is_moe(m)) {
      // Each token visits k routed experts (and the shared ones); every local expert's weights
      // are read once.
      const double local = std::max(1.0, static_cast<double>(m.experts) / in.parallel.ep);
      // Each expert is split over etp ranks, which share the tokens routed to it: etp = tp
      // gathers the tensor-parallel group's tokens, etp = 1 keeps each rank's own.
      const double etp = expert_tp(in.parallel);
      const double tokens = T * m.experts_per_token * etp / t;
      const double f_e = m.expert_ffn / etp;
      const GemmBytes up = gemm_bytes(tokens, h, f_e, operand);
      const GemmBytes down = gemm_bytes(tokens, f_e, h, operand);
      const double w_up = operand * h * f_e * (local - 1.0);
      const double ups = mats - 1;
      double fwd = ups * (up.forward + w_up) + down.forward + w_up;
      double bwd = ups * (up.input_grad + w_up) + down.input_grad + w_up;
      if (!frozen) bwd += ups * (up.weight_grad + w_up) + down.weight_grad + w_up;
      if (shared_width > 0) {
        const GemmBytes su = gemm_bytes(T, h, shared_width / t, operand);
        const GemmBytes sd = gemm_bytes(T, shared_width / t, h, operand);
        fwd += ups * su.forward + sd.forward;
        bwd += ups * su.input_grad + sd.input_grad;
        if (!frozen) bwd += ups * su.weight_grad + sd.weight_grad;
      }
      f.gemm_forward_bytes += moe_share * fwd;
      f.gemm_backward_bytes += moe_share * bwd;
      add(T, h, m.experts, moe_share);  // router
    }
    if (moe_share < 1) {
      add(T, h, m.ffn / t, (mats - 1) * (1 - moe_share));  // up (and gate)
      add(T, m.ffn / t, h, 1 - moe_share);                 // down
    }
  }
  // Packed documents attend only within themselves (FlashAttention varlen, document masks).
  const std::int64_t doc = in.training.document_length;
  const double s_keys =
      static_cast<double>(doc > 0 ? std::min(doc, in.training.seq_len) : in.training.seq_len);
  // Q·Kᵀ over the query/key head dimension, P·V over the value head dimension.
  f.attention = 2 * T * s_keys * m.heads * (d + dv) / t;
  if (m.sliding_window > 0 && m.sliding_window < s_keys) {
    // A causal window of w keys executes w/s·(1 − w/2s) of the s² a full causal layer does half
    // of: as keys, 2w − w²/s. Local layers are all but every global_every-th.
    const double w = m.sliding_window;
    const double local_keys = 2 * w - w * w / s_keys;
    const double global_share = m.global_every > 0 ? 1.0 / m.global_every : 0.0;
    f.attention *= global_share + (1 - global_share) * local_keys / s_keys;
  } else if (m.attention_chunk > 0 && m.attention_chunk < s_keys) {
    // Causal attention within blocks of c tokens executes c/s of what a full causal layer does
    // (s/c blocks of c²/2): as keys, c.
    const double global_share = m.global_every > 0 ? 1.0 / m.global_every : 0.0;
    f.attention *= global_share + (1 - global_share) * m.attention_chunk / s_keys;
  }
  const double f_width = moe_share * (m.expert_ffn * static_cast<double>(m.experts_per_token)) +
                         (1 - moe_share) * m.ffn;
  f.op_recomputed = 2 * T * (h * kv + q * h + h * f_width) / t;
  if (in.training.precision == DType::fp8) {
    // Every GEMM operand is quantized: the inputs of q/k/v, o, the MLP's first and second
    // matmuls in forward, their output gradients in backward, and the weights once per
    // micro-batch, each at the recipe's bytes per element (cast_bytes: 7 B for current
    // scaling's amax pass, cast and transposed copy; docs/formulas.md#recipes).
    const double mlp_width =
        moe_share * (m.expert_ffn * static_cast<double>(m.experts_per_token) + shared_width) +
        (1 - moe_share) * m.ffn;
    const double inputs = T * (h + q + h + mlp_width);
    const double out_grads = T * (q + 2 * kv + h + (mats - 1) * mlp_width + h);
    const double weights =
        attn + attn_whole * t +
        moe_share * mats * h * (static_cast<double>(m.expert_ffn) * m.experts + shared_width) +
        (1 - moe_share) * mats * h * m.ffn;
    f.fp8_casts = cast_bytes(in) * (inputs + out_grads + weights) / t;
  }
  return f;
}

double adapter_flops(const PlanInput& in) {
  if (in.training.finetune == Finetune::full || in.model.count_only) return 0;
  // Each adapter: x·A (T × d_in × r) and (xA)·B (T × r × d_out); small against the base.
  double params = 0;
  const ModelSpec& m = in.model;
  const double h = m.hidden, r = in.training.lora_rank;
  const double q = m.heads * static_cast<double>(head_dim(m));
  const double kv = m.kv_heads * static_cast<double>(head_dim(m));
  for (LoraTarget target : in.training.lora_targets) {
    switch (target) {
      case LoraTarget::q:
      case LoraTarget::o:
        params += r * (h + q);
        break;
      case LoraTarget::k:
      case LoraTarget::v:
        params += r * (h + kv);
        break;
      case LoraTarget::gate:
      case LoraTarget::up:
      case LoraTarget::down:
        params += r * (h + m.ffn);
        break;
    }
  }
  return 2 * local_tokens(in) * params / in.parallel.tp;
}

}  // namespace

StageFlops stage_flops(const PlanInput& in, int stage_layers, bool last) {
  StageFlops s;
  const ModelSpec& m = in.model;
  if (m.count_only) return s;
  const LayerFlops lf = layer_flops(in);
  const double adapters = adapter_flops(in);
  const double T = local_tokens(in);
  // Multi-token prediction on the last stage: one more layer, an h × 2h projection and one
  // more pass of the LM head and its loss per module.
  const int mtp = last ? m.mtp_layers : 0;
  const int layers = stage_layers + mtp;
  const double heads = 1.0 + mtp;
  const double proj = 2 * T * 2.0 * m.hidden * m.hidden * mtp / in.parallel.tp;
  const double head =
      last ? heads * 2 * T * m.hidden * static_cast<double>(m.vocab) / in.parallel.tp : 0;
  s.forward = (lf.matmul + lf.attention + adapters) * layers + proj;
  if (last) s.forward += head;
  // Frozen matmuls (LoRA, QLoRA) need only the input gradient.
  const bool frozen = in.training.finetune != Finetune::full;
  const double matmul_bwd = (frozen ? 1.0 : 2.0) * lf.matmul + 2.0 * adapters;
  const double head_bwd = (frozen ? 1.0 : 2.0) * head;
  s.backward = layers * (matmul_bwd + 2.0 * lf.attention) + head_bwd + (frozen ? 1.0 : 2.0) * proj;
  s.gemm = layers * (lf.matmul + adapters + matmul_bwd) + (frozen ? 2.0 : 3.0) * proj;
  // The slowest rank's experts take moe_load × their balanced share of the routed tokens.
  s.gemm += layers * (moe_load(in) - 1) * lf.routed_matmul * (frozen ? 2.0 : 3.0);
  s.gemm_bytes = layers * (lf.gemm_forward_bytes + lf.gemm_backward_bytes);
  if (last) {
    const GemmBytes g = gemm_bytes(T, m.hidden, static_cast<double>(m.vocab) / in.parallel.tp, 2);
    s.gemm_bytes += heads * (g.forward + g.input_grad + (frozen ? 0.0 : g.weight_grad));
  }
  // Flash attention is its own kernel with its own rate; causal, it skips the masked half of
  // QKᵀ and AV (FlashAttention-2, Dao 2023, §3.1.1). Eager attention's batched matmuls compute
  // the whole s² product and run as GEMMs. MFU keeps the full s² terms (forward, backward).
  const bool flash = in.training.attention == Attention::flash;
  s.core = (flash ? 0.0 : layers * 3.0 * lf.attention) + head + head_bwd;
  s.flash = flash ? layers * 3.0 * lf.attention * 0.5 : 0.0;
  s.attention = layers * 3.0 * lf.attention;
  // Element-wise kernels, op by op (layer_traffic); the loss streams its logits about 22 B per
  // token per vocabulary entry (forward and backward), a fused cross-entropy kernel 6 B: it
  // reads the 16-bit logits twice and writes their gradient once.
  const Traffic traffic = layer_traffic(in);
  const double loss_bytes = in.training.loss == Loss::fused ? 6.0 : 22.0;
  const double loss =
      last ? heads * loss_bytes * T * static_cast<double>(m.vocab) / loss_vocab_split(in) : 0;
  s.elementwise_bytes = layers * (traffic.forward + traffic.backward + lf.fp8_casts) + loss;
  const int ckpt = in.training.recompute == Recompute::none
                       ? 0
                       : static_cast<int>(in.training.recompute_layers * layers + 0.5);
  // The recomputed forward repeats the element-wise ops whose outputs were not kept: the
  // forward's traffic in the share of the layer's saved bytes that recomputation drops.
  if (ckpt > 0) {
    const Tensors layer = layer_tensors(in);
    const double none_bytes = layer_bytes(in, layer, Recompute::none);
    if (none_bytes > 0)
      s.recompute_elementwise_bytes =
          ckpt * traffic.forward * recomputed_bytes(in, layer, in.training.recompute) / none_bytes;
  }
  switch (in.training.recompute) {
    case Recompute::none:
      break;
    case Recompute::selective: {
      // The attention core (with flash attention it is part of the kernel, not recomputed on
      // its own), and the modules training.recompute_modules names: their forward GEMMs.
      const std::uint8_t mods = in.training.recompute_modules;
      if (recomputes(mods, RecomputeModule::core_attn) &&
          in.training.attention == Attention::eager) {
        s.recompute = ckpt * lf.attention;
        s.recompute_core = s.recompute;
      }
      double gemm = 0;
      if (recomputes(mods, RecomputeModule::moe))
        gemm += lf.moe_matmul;
      else if (recomputes(mods, RecomputeModule::shared_experts))
        gemm += lf.shared_matmul;
      if (recomputes(mods, RecomputeModule::mlp)) gemm += lf.dense_mlp;
      s.recompute += ckpt * gemm;
      s.recompute_gemm = ckpt * gemm;
      break;
    }
    case Recompute::op:
      s.recompute = ckpt * lf.op_recomputed;
      s.recompute_gemm = s.recompute;
      // An attention kernel the save list does not name runs its forward again.
      if (!in.training.op_saves_attention && in.training.attention != Attention::eager) {
        s.recompute += ckpt * lf.attention;
        s.recompute_core = ckpt * lf.attention;
      }
      break;
    case Recompute::full:
      s.recompute = ckpt * (lf.matmul + lf.attention + adapters);
      s.recompute_gemm = ckpt * (lf.matmul + adapters);
      s.recompute_core = ckpt * lf.attention;
      break;
  }
  // The recomputed GEMMs move the forward's operand bytes in the share of its FLOPs they repeat.
  if (lf.matmul > 0)
    s.recompute_gemm_bytes = lf.gemm_forward_bytes * s.recompute_gemm / (lf.matmul + adapters);
  // Host dispatch: every kernel of the forward is an op dispatched from Python in eager
  // PyTorch (compiled code launches its kernels directly), every backward kernel a node of the
  // autograd engine; captured CUDA graphs replay a layer's pass with one launch.
  {
    const ClusterSpec& c = in.cluster;
    const TrainingSpec& t = in.training;
    if (t.cuda_graphs) {
      s.host_forward_s = layers * c.launch_overhead;
      s.host_backward_s = (layers + ckpt) * c.launch_overhead;
    } else {
      const Kernels k = layer_kernels(in);
      const double fwd = t.compile ? c.launch_overhead : c.op_overhead;
      double recomputed = 0;  // kernels of one layer's recomputed forward
      switch (t.recompute) {
        case Recompute::none:
          break;
        case Recompute::selective:
          if (recomputes(t.recompute_modules, RecomputeModule::core_attn) &&
              t.attention == Attention::eager)
            recomputed = 5;
          break;
        case Recompute::op:
          recomputed = 3;  // the saved-list policy's GEMMs (k, o, up or fc2)
          if (!t.op_saves_attention && t.attention != Attention::eager) recomputed += 1;
          break;
        case Recompute::full:
          recomputed = k.forward;
          break;
      }
      s.host_forward_s = layers * k.forward * fwd;
      s.host_backward_s = layers * k.backward * c.launch_overhead + ckpt * recomputed * fwd;
      if (last) {
        // The final norm, the LM head's GEMMs and the loss (a cast, log-softmax and NLL; one
        // kernel fused), per head.
        const double norm_f = t.fused_elementwise || m.norm != NormKind::rmsnorm ? 1 : 8;
        const double loss_k = t.loss == Loss::standard ? 3 : 1;
        s.host_forward_s += heads * (norm_f + 1 + loss_k) * fwd;
        s.host_backward_s += heads * (norm_f + (frozen ? 1 : 2) + loss_k) * c.launch_overhead;
      }
    }
  }
  s.attention += s.recompute_core;
  if (flash) {
    // Full recompute repeats the flash kernel's forward: half of it executes, at its rate.
    s.recompute_flash = 0.5 * s.recompute_core;
    s.recompute_core = 0;
  }
  return s;
}

}  // namespace trainledger
