// Buffers that live only during one phase of the step (docs/formulas.md#temporaries).
#include <algorithm>
#include <cmath>

#include "activations.hpp"
#include "memory.hpp"
#include "state.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src =
    "docs/formulas.md#temporaries: PyTorch autograd (loss, recompute, gradients), FSDP2 "
    "(gathered units, prefetch, reduce-scatter), DDP buckets (bucket_cap_mb, "
    "gradient_as_bucket_view), ZeRO-1/2 buckets";

template <typename V>
struct Parts {
  V sum = V::term("none", 0, "B");
  bool any = false;
  void add(const V& e, std::string_view what) {
    const V part = e.note(what);
    sum = any ? sum + part : part;
    any = true;
  }
};

// FSDP2 wraps every transformer layer and the root (embedding, final norm, head); a unit is
// gathered in the compute dtype before use and the next one is prefetched.
template <typename V>
void fsdp_gathers(const PlanInput& in, const StagePlace& place, bool backward, Parts<V>& parts) {
  const StageParams layer = stage_params(in, 1, false, false);
  const double unit = layer.total();
  double bytes = gathered_bytes(in, unit > 0 ? layer.matrix / unit : 0);
  if (in.training.finetune == Finetune::qlora && unit > 0) {
    // QLoRA under FSDP gathers the layer matrices in their 4-bit storage (bitsandbytes
    // bnb_4bit_quant_storage in the flat parameter) with their block constants.
    const double nf4 = 0.5 + (in.training.double_quant ? 1.0 / 64 + 4.0 / (64 * 256) : 4.0 / 64);
    bytes = (layer.matrix * nf4 + (unit - layer.matrix) * param_bytes(in.training)) / unit;
  }
  // Only trainable parameters get gradients: a LoRA layer's adapters, not its frozen base.
  const double unit_grads = in.training.finetune == Finetune::full ? unit : layer.adapters;
  // The root (embeddings, LM head) stays in 16 bits: FP8 recipes leave the output layer out.
  // Split ends (torchtitan's apply_fsdp): the embedding's unit reshards after its forward and
  // is gathered again only when backward reaches it, after the layers; the head's unit stays
  // gathered through its backward. Tied embeddings share one unit.
  const bool split = fsdp_splits_ends(in);
  const double root = stage_params(in, 0, place.first && !split, place.last).total();
  const V b = V::term("param_bytes", bytes, "B/param");
  if (root > 0)
    parts.add(
        V::term("param_bytes", param_bytes(in.training), "B/param") *
            V::term("root_params", root, split ? "final norm and head params" : "root params"),
        split ? "gathered final norm and LM head unit" : "gathered root unit");
  if (place.layers > 0 && in.training.framework == Framework::deepspeed) {
    // DeepSpeed ZeRO-3 keeps a gathered parameter while it is reused within
    // stage3_max_reuse_distance and holds up to stage3_max_live_parameters (both 1e9
    // elements by default, deepspeed/runtime/zero/config.py): at the turn from forward to
    // backward the last layers stay gathered. Gradients go through one contiguous reduce
    // bucket (stage3.py: __ipg_bucket_flat_buffer of reduce_bucket_size elements).
    const double live =
        std::max(2 * unit, std::min(in.parallel.zero3_live_params, place.layers * unit));
    parts.add(b * V::term("live_params", live, "params (≤ stage3_max_live_parameters)"),
              "gathered parameters kept for reuse");
    // Parameters fetched ahead of their use: stage3_prefetch_bucket_size (5e7 elements).
    if (in.parallel.zero3_prefetch > 0)
      parts.add(b * V::term("prefetch_params", in.parallel.zero3_prefetch,
                            "params (stage3_prefetch_bucket_size)"),
                "prefetched parameters");
    if (backward)
      parts.add(V::term("bucket", in.parallel.bucket_size, "B"), "contiguous reduce bucket");
    return;
  }
  if (place.layers > 0) {
    // The current layer and the prefetched next one; without resharding after forward every
    // layer stays gathered from its forward to its backward, so at the turn all are held.
    // FSDP1 without limit_all_gathers: the CPU runs ahead and every unit may be gathered at
    // once (torch/distributed/fsdp/_runtime_utils.py: the rate limiter is _limit_all_gathers).
    const bool keep = !in.parallel.reshard_after_forward;
    const bool ahead = !in.parallel.limit_all_gathers;
    parts.add(b * V::term("unit_params", unit, "params per layer") *
                  V::term("units", keep || ahead ? place.layers : 2, "layers"),
              keep ? "gathered layers kept from forward to backward (reshard_after_forward = false)"
              : ahead ? "every layer gathered at once (limit_all_gathers = false)"
                      : "gathered layer + prefetched next");
    if (backward && unit_grads > 0)
      parts.add(V::term("grad_bytes", dtype_bytes(in.training.grad_dtype), "B/param") *
                    V::term("unit_trainable_params", unit_grads, "trainable params per layer"),
                "unsharded layer gradients before reduce-scatter");
  }
}

template <typename V>
void loss_parts(const PlanInput& in, bool backward, Parts<V>& parts) {
  const V tokens = V::term("tokens", local_tokens(in), "tokens");
  const V vocab = V::term("vocab", static_cast<double>(in.model.vocab), "vocab") /
                  V::term("tp", loss_vocab_split(in), "ranks the vocabulary is split over");
  // The loss's dtype (training.loss_dtype): fp32 upcast logits, or the 16-bit logits' own.
  const int lb = dtype_bytes(in.training.loss_dtype);
  const bool fp32 = in.training.loss_dtype == DType::fp32;
  if (in.training.loss == Loss::chunked) {
    // Liger-style fused linear cross-entropy: chunks of tokens / ceil(V / h).
    const double chunks = std::ceil(static_cast<double>(in.model.vocab) / in.model.hidden);
    const double chunk = std::ceil(local_tokens(in) / chunks);
    parts.add(V::term("bytes", 2 * lb,
                      fp32 ? "B (fp32 logits + gradient)" : "B (16-bit logits + gradient)") *
                  V::term("chunk_tokens", chunk, "tokens per chunk") * vocab,
              "one chunk of logits");
    return;
  }
  if (in.training.loss == Loss::fused) {
    // flash-attn's CrossEntropyLoss: no fp32 copy; backward writes a 16-bit gradient.
    if (backward)
      parts.add(V::term("bytes", 2, "B (16-bit)") * tokens * vocab,
                "the logits' gradient for the output layer");
    return;
  }
  if (in.training.framework == Framework::megatron) {
    // Megatron-LM's vocab-parallel cross-entropy works in place on its fp32 copy of the logits
    // (the saved softmax becomes the gradient: tensor_parallel/cross_entropy.py); besides
    // it only the 16-bit logits (forward) or their 16-bit gradient (backward) exist:
    // 6 B per logit at the peak, not 12.
    parts.add(
        V::term("bytes", 2, "B (16-bit)") * tokens * vocab,
        backward ? "the logits' gradient for the output layer" : "logits before the fp32 copy");
    return;
  }
  if (in.training.framework == Framework::pytorch && in.parallel.tp > 1 && fp32) {
    // PyTorch's loss_parallel (torchtitan's default under TP: the logits sharded over the
    // vocabulary) runs DTensor's own decomposition (torch/distributed/tensor/parallel/loss.py).
    // Forward, _log_softmax: the fp32 logits, `shifted = x - max` and `exp(shifted)` live
    // together, 12 B per logit of which the saved log-probs' 4 B are the logits item: 8 B here.
    // Backward, _nll_loss_and_log_softmax_backward: `zeros_like(x)`, `exp(x)`, their sum and
    // its product with grad_output beside the saved log-probs, 16 B: 12 B here.
    if (backward)
      parts.add(V::term("bytes", 12, "B (fp32 zeros_like, exp, sum, product)") * tokens * vocab,
                "loss-parallel backward of the log-probs (DTensor)");
    else
      parts.add(V::term("bytes", 8, "B (fp32 logits and shifted copy)") * tokens * vocab,
                "loss-parallel log-softmax (DTensor)");
    return;
  }
  if (backward) {
    parts.add(V::term("bytes", 2 * lb, fp32 ? "B (fp32)" : "B (16-bit)") * tokens * vocab,
              "gradients of the log-probabilities and of the logits");
  } else if (fp32) {
    parts.add(V::term("bytes", 6, "B (bf16 logits + fp32 copy)") * tokens * vocab,
              "logits while log-softmax runs");
  } else {
    parts.add(V::term("bytes", 2, "B (16-bit logits, no upcast)") * tokens * vocab,
              "logits while log-softmax runs");
  }
}

template <typename V>
void backward_parts(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                    const StagePlace& place, const Items<V>& state, Parts<V>& parts) {
  const Recompute mode = in.training.recompute;
  if (mode != Recompute::none && place.layers > 0 && in.training.recompute_layers > 0) {
    const double extra = model.layer_none.value() - model.layer_mode.value();
    parts.add(V::term("recomputed_bytes", extra, "B"), "one layer rematerialized");
  }
  if (place.layers > 0) {
    SavedTensor hidden;
    hidden.elements = local_tokens(in) * in.model.hidden;
    hidden.bytes = in.training.precision == DType::fp32 ? 4 : 2;
    hidden.split = Split::seq;
    parts.add(V::term("hidden_grads", 2 * tensor_bytes(in, hidden), "B") +
                  V::term("largest_intermediate", model.largest_tensor, "B"),
              "gradients in flight through one layer (assumed)");
  }
  if (in.training.finetune == Finetune::qlora && place.layers > 0) {
    // bitsandbytes dequantizes one 4-bit matrix at a time to compute the input gradient.
    const double h = in.model.hidden;
    const double f = is_moe(in.model) ? in.model.expert_ffn : in.model.ffn;
    parts.add(V::term("bytes", 2, "B") * V::term("matrix_elements", h * f / in.parallel.tp,
                                                 "elements of the largest matrix"),
              "one NF4 matrix dequantized for backward");
  }
  const ParallelSpec& p = in.parallel;
  const bool replicated = p.dp * p.cp > 1;
  if (p.zero == 0 && replicated && !p.gradient_as_bucket_view) {
    parts.add(V::term("grads", value_of(state, ItemId::grads), "B"),
              "DDP buckets: a second copy of the gradients");
  }
  // Megatron-Core's buckets are views of its contiguous gradient buffer: no copies.
  if ((p.zero == 1 || p.zero == 2) && replicated && in.training.framework != Framework::megatron) {
    // DeepSpeed's ZeRO optimizer (stage_1_and_2.py: 16-bit gradients; bf16 at ZeRO-1 runs
    // BF16_Optimizer instead) with overlap_comm holds 4.5 × its reduce and all-gather buckets
    // (Hugging Face's DeepSpeed guide: 5e8 × 2 B × 2 × 4.5 = 9 GB at the default sizes).
    const bool deepspeed_overlap = in.training.framework == Framework::deepspeed && p.overlap_dp &&
                                   in.training.grad_dtype != DType::fp32;
    if (deepspeed_overlap) {
      // 4.5 × (reduce_bucket_size + allgather_bucket_size), the all-gather bucket in the
      // weights' 16-bit dtype.
      parts.add(V::term("overlap_factor", 4.5, "× (overlap_comm)") *
                    (V::term("bucket", p.bucket_size, "B (reduce bucket)") +
                     V::term("allgather_bucket", p.allgather_bucket * 2, "B (all-gather bucket)")),
                "gradient buckets in flight");
    } else {
      parts.add(V::term("bucket", p.bucket_size, "B") * V::term("buckets", 2, "buckets"),
                "gradient buckets in flight");
    }
  }
  if (in.training.framework == Framework::deepspeed && p.zero <= 1 &&
      in.training.grad_dtype == DType::fp32 && master_bytes(in.training) > 0) {
    // DeepSpeed's BF16_Optimizer keeps the fp32 accumulation buffer (fp32_groups_gradients)
    // beside the 16-bit param.grad autograd writes in backward; they are added to it after the
    // backward pass and cleared (runtime/bf16_optimizer.py update_hp_grads, clear_lp_grads).
    const double elements = value_of(state, ItemId::grads) / 4;
    parts.add(
        V::term("grad_elements", elements, "gradient elements") *
            V::term("bytes",
                    dtype_bytes(in.training.precision == DType::fp16 ? DType::fp16 : DType::bf16),
                    "B (16-bit param.grad)"),
        "16-bit gradients before they are added to the fp32 buffer (BF16_Optimizer)");
  }
  if (p.zero >= 2 && p.grad_sync == GradSync::last_micro_batch && d.grad_accum > 1) {
    const double sharded = value_of(state, ItemId::grads);
    const double full = sharded * d.shard_group;
    parts.add(V::term("unsharded_grads", full - sharded, "B"),
              "unsharded gradients held across micro-batches (no-sync)");
  }
}

}  // namespace

// Hugging Face model code with config.use_cache and without its own gradient checkpointing
// returns every layer's keys and values (past_key_values) from the training forward
// (transformers LlamaModel.forward: use_cache is forced off only under
// self.gradient_checkpointing): the stage's whole cache is live when the loss runs, and
// through backward while the loop holds the output. 16-bit K and V per layer, KV heads split
// over tp.
template <typename V>
V output_cache(const PlanInput& in, const StagePlace& place) {
  const ModelSpec& m = in.model;
  const double kv_heads = std::max(1.0, static_cast<double>(m.kv_heads) / in.parallel.tp);
  return V::term("layers", place.layers, "layers on the stage") *
         V::term("tokens", local_tokens(in), "tokens") *
         V::term("kv_elements", kv_heads * (head_dim(m) + v_head_dim(m)),
                 "K and V elements per token per layer (kv heads / tp × (d_k + d_v))") *
         V::term("bytes", 2, "B (16-bit)");
}

// The output the loop holds through backward (outputs = model(**batch); loss = outputs.loss,
// as llama-recipes did before its PR #41): the logits at the loss's dtype, and the cache.
template <typename V>
void kept_outputs(const PlanInput& in, const StagePlace& place, bool backward, Parts<V>& parts) {
  if (in.training.use_cache && (!backward || in.training.keep_outputs))
    parts.add(output_cache<V>(in, place),
              backward ? "past_key_values kept through backward (use_cache, keep_outputs)"
                       : "past_key_values of every layer (use_cache)");
  if (backward && in.training.keep_outputs && place.last)
    parts.add(V::term("bytes", dtype_bytes(in.training.loss_dtype), "B (the loss's dtype)") *
                  V::term("tokens", local_tokens(in), "tokens") *
                  V::term("vocab", static_cast<double>(in.model.vocab), "vocab") /
                  V::term("tp", loss_vocab_split(in), "ranks the vocabulary is split over"),
              "the output's logits kept through backward (keep_outputs)");
}

// torch.optim's Adam/AdamW without the fused kernel (torch/optim/adam.py): the multi-tensor
// step (_multi_tensor_adam, capturable=False) takes exp_avg_sq_sqrt =
// torch._foreach_sqrt(device_exp_avg_sqs), a copy of every second moment of the device at once
// (divided and eps added in place, consumed by _foreach_addcdiv_); the for-loop
// (_single_tensor_adam) makes that copy one tensor at a time, the largest being the embedding
// or the head. Measured on one H200 under PyTorch 2.11 (tests/reference/replica/h200-20261204):
// the optimizer phase peaks at 20.0 B per parameter, the 16 B of the state plus this copy.
template <typename V>
void optimizer_step_copies(const PlanInput& in, const Derived& d, const Items<V>& state,
                           Parts<V>& parts) {
  const TrainingSpec& t = in.training;
  if (t.optimizer != Optimizer::adamw || t.optimizer_impl == OptimizerImpl::fused ||
      in.parallel.offload != Offload::none)
    return;
  const double v = value_of(state, ItemId::optimizer_v);
  if (!(v > 0)) return;
  if (t.optimizer_impl == OptimizerImpl::foreach) {
    parts.add(V::term("optimizer_v", v, "B of second moments"),
              "the foreach step's copy of the second moments (_foreach_sqrt)");
    return;
  }
  // One tensor at a time: the largest, the embedding (vocab × hidden), as a share of the
  // parameters whose state this GPU holds.
  const double total = d.params > 0 ? d.params : 1;
  const double largest =
      std::min(1.0, static_cast<double>(in.model.vocab) * in.model.hidden / total);
  parts.add(V::term("optimizer_v", v, "B of second moments") *
                V::term("largest_share", largest, "share of the largest tensor (the embedding)"),
            "the for-loop step's copy of one tensor's second moments");
}

template <typename V>
Items<V> temporary_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                         const StagePlace& place, const Items<V>& state, Phase phase) {
  Parts<V> parts;
  const bool arch = !in.model.count_only;
  switch (phase) {
    case Phase::init:
      break;
    case Phase::forward:
      if (arch && place.last) loss_parts<V>(in, false, parts);
      if (arch) kept_outputs<V>(in, place, false, parts);
      if (in.parallel.zero >= 3 && arch) fsdp_gathers<V>(in, place, false, parts);
      break;
    case Phase::backward:
      if (arch && place.last) loss_parts<V>(in, true, parts);
      if (arch) kept_outputs<V>(in, place, true, parts);
      if (arch) backward_parts<V>(in, d, model, place, state, parts);
      if (in.parallel.zero >= 3 && arch) fsdp_gathers<V>(in, place, true, parts);
      break;
    case Phase::optimizer:
      optimizer_step_copies<V>(in, d, state, parts);
      // A mixed-precision optimizer with 16-bit gradients upcasts them to fp32 for the
      // update: ZeRO the shard it owns (DeepSpeed's fp32 partition gradients), without ZeRO
      // all of them (Megatron's Float16OptimizerWithFloat16Params copies the grads into its
      // fp32 main params' .grad). Stacks that keep fp32 gradients set grad_dtype = fp32.
      if (master_bytes(in.training) > 0 && in.training.grad_dtype != DType::fp32) {
        const double grads = value_of(state, ItemId::grads);
        const double shard = in.parallel.zero == 1 ? d.shard_group : 1;
        double elements = grads / dtype_bytes(in.training.grad_dtype) / shard;
        if (in.training.framework == Framework::deepspeed) {
          // DeepSpeed flattens the partition's 16-bit gradients, then copies them to fp32
          // (stage_1_and_2.py; stage3.py _prepare_fp32_grad_for_sub_group does it one
          // sub_group_size = 1e9 elements at a time).
          if (in.parallel.zero >= 3) elements = std::min(elements, 1e9);
          if (in.parallel.zero == 0 && in.training.precision == DType::fp16) {
            // Without ZeRO, DeepSpeed's fp16 engine runs FP16_Optimizer
            // (runtime/fp16/fused_optimizer.py, step): each 16-bit gradient is copied to
            // fp32 (p.grad.to(fp32)) and the list flattened into the group's fp32 .grad, so
            // per-parameter fp32 copies and their flat copy live together beside the
            // 16-bit gradients.
            parts.add(V::term("grad_elements", elements, "gradient elements") *
                          V::term("bytes", 8, "B (fp32 copies + their flattened group)"),
                      "fp32 copies of the gradients for the update (FP16_Optimizer)");
          } else {
            parts.add(V::term("grad_elements", elements, "gradient elements (≤ sub_group_size)") *
                          V::term("bytes", 4 + dtype_bytes(in.training.grad_dtype),
                                  "B (fp32 copy + flattened 16-bit)"),
                      "fp32 copy of the gradient partition for the update");
          }
        } else {
          parts.add(
              V::term("grad_elements", elements, "gradient elements") * V::term("bytes", 4, "B"),
              "fp32 copy of the gradient shard for the update");
        }
      }
      break;
    case Phase::checkpoint:
      if (in.checkpoint.format == CheckpointFormat::gathered && in.parallel.zero >= 3) {
        parts.add(V::term("bytes", 4, "B") * V::term("unit_params",
                                                     stage_params(in, 1, false, false).total(),
                                                     "params per layer"),
                  "one layer gathered in fp32 for the consolidated save");
      }
      break;
  }
  Items<V> out;
  if (!parts.any) return out;
  out.push_back(make(
      ItemId::temporaries,
      [&] { return "temporary buffers (" + std::string(to_string(phase)) + ")"; }, Unit::bytes,
      parts.sum, k_src, Kind::estimated));
  return out;
}

template Items<Expr> temporary_items<Expr>(const PlanInput&, const Derived&,
                                           const MemoryModel<Expr>&, const StagePlace&,
                                           const Items<Expr>&, Phase);
template Items<Num> temporary_items<Num>(const PlanInput&, const Derived&, const MemoryModel<Num>&,
                                         const StagePlace&, const Items<Num>&, Phase);

}  // namespace trainledger
